"""Instant-query answers: vectors and scalars are samples; anything else is an error."""

from __future__ import annotations

from typing import Any

import pytest

from sluiceway.signals.promql import PromQLSource, parse_query_response


def _vector(*values: str) -> dict[str, Any]:
    result = [
        {"metric": {"__name__": "m", "pod": str(i)}, "value": [1, v]} for i, v in enumerate(values)
    ]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def test_vector_gives_one_sample_per_series() -> None:
    samples = parse_query_response(_vector("0.25", "NaN"))
    assert samples[0].value == 0.25 and samples[0].labels["pod"] == "0"
    assert samples[0].name == "m"


def test_scalar_and_empty_vector() -> None:
    scalar = {"status": "success", "data": {"resultType": "scalar", "result": [1, "0.5"]}}
    assert parse_query_response(scalar)[0].value == 0.5
    assert parse_query_response(_vector()) == ()


@pytest.mark.parametrize(
    "body",
    [
        {"status": "error", "errorType": "bad_data", "error": "parse error"},
        {"status": "success", "data": {"resultType": "matrix", "result": []}},
        {"status": "success", "data": {}},
        ["not", "an", "object"],
    ],
)
def test_errors_and_bad_shapes_raise(body: Any) -> None:
    with pytest.raises(ValueError, match="prometheus"):
        parse_query_response(body)


async def test_unreachable_server_reads_as_an_error() -> None:
    source = PromQLSource("http://127.0.0.1:9", "up", timeout=2)
    try:
        reading = await source.read()
    finally:
        await source.aclose()
    assert reading.error and not reading.available
    assert source.key == "promql http://127.0.0.1:9/api/v1/query up"
