"""Objective, fairness id, TTL, SLO and the request id from a request's headers."""

from __future__ import annotations

import pytest

from sluiceway.router.identity import claim_request_id, header_map, read_identity


def test_newer_objective_spelling_wins_and_defaults() -> None:
    both = {"x-llm-d-inference-objective": "new", "x-gateway-inference-objective": "old"}
    assert read_identity(both).objective == "new"
    assert read_identity({"x-gateway-inference-objective": "old"}).objective == "old"
    empty = read_identity({})
    assert (empty.objective, empty.fairness_id, empty.ttl) == (None, "default-flow", None)


def test_fairness_ttl_and_slo() -> None:
    found = read_identity(
        {
            "x-gateway-inference-fairness-id": "team",
            "x-llm-d-inference-ttl": "1m30s",
            "x-slo-ttft-ms": "250",
        }
    )
    assert (found.fairness_id, found.ttl, found.slo_ttft_ms) == ("team", 90.0, 250)
    assert read_identity({"x-llm-d-inference-ttl": "soon"}).ttl is None


def test_header_map_lower_case_raw() -> None:
    assert header_map([(b"a", b"1"), (b"b", b"2")]) == {"a": "1", "b": "2"}


def test_a_kept_request_id_leaves_the_headers_as_they_came() -> None:
    raw = [(b"content-type", b"application/json"), (b"x-request-id", b"req_42.a")]
    rid, out = claim_request_id(raw)
    assert (rid, out) == ("req_42.a", raw)


@pytest.mark.parametrize(
    "raw",
    [
        [(b"accept", b"*/*")],
        [(b"x-request-id", b"x" * 257), (b"accept", b"*/*")],
        [(b"x-request-id", b"two words"), (b"accept", b"*/*")],
    ],
)
def test_a_missing_or_unkept_id_is_replaced_by_one_fresh_id(raw: list[tuple[bytes, bytes]]) -> None:
    rid, out = claim_request_id(raw)
    assert len(rid) == 36 and rid.count("-") == 4
    assert out == [(b"accept", b"*/*"), (b"x-request-id", rid.encode())]
    assert claim_request_id(raw)[0] != rid  # fresh each time


def test_of_several_ids_the_first_is_kept_alone() -> None:
    raw = [(b"x-request-id", b"first"), (b"x-request-id", b"second")]
    assert claim_request_id(raw) == ("first", [(b"x-request-id", b"first")])
