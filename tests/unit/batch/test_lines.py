"""Batch input lines are checked one by one; every error names its line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluiceway.batch.lines import LineError, LineValidator, parse_line


def raw(**changes: Any) -> bytes:
    line = {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    }
    line.update(changes)
    return json.dumps({k: v for k, v in line.items() if v is not None}).encode()


def test_a_good_line_parses() -> None:
    line = parse_line(raw(), 3)
    assert (line.number, line.custom_id, line.url, line.model) == (
        3,
        "a",
        "/v1/chat/completions",
        "m",
    )


@pytest.mark.parametrize(
    ("text", "param", "words"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"NaN", None, "not valid JSON"),
        (b"[1]", None, "JSON object"),
        (raw(custom_id=None), "custom_id", "custom_id"),
        (raw(custom_id=""), "custom_id", "custom_id"),
        (raw(custom_id="x" * 513), "custom_id", "longer"),
        (raw(method="GET"), "method", "POST"),
        (raw(url="/v1/images"), "url", "url must be one of"),
        (raw(body=[1]), "body", "body must be"),
        (raw(body={"messages": []}), "body.model", "model"),
        (raw(body={"model": "m", "stream": True}), "body.stream", "stream"),
    ],
)
def test_each_error_names_the_line_and_field(text: bytes, param: str | None, words: str) -> None:
    with pytest.raises(LineError) as err:
        parse_line(text, 7)
    assert str(err.value).startswith("line 7: ") and words in str(err.value)
    assert err.value.line == 7 and err.value.param == param


def test_the_injected_body_check_speaks_for_the_body() -> None:
    def check(body: dict[str, Any], url: str) -> str | None:
        return f"bad for {url}" if body.get("model") == "m" else None

    with pytest.raises(LineError, match="line 2: bad for /v1/chat/completions"):
        parse_line(raw(), 2, check_body=check)
    assert parse_line(raw(body={"model": "other"}), 2, check_body=check).model == "other"


def test_custom_ids_must_be_unique_and_blank_lines_are_skipped() -> None:
    checker = LineValidator()
    assert checker.feed(raw(custom_id="a")) is not None
    assert checker.feed(b"  \n") is None
    with pytest.raises(LineError, match="line 3: duplicate custom_id 'a'"):
        checker.feed(raw(custom_id="a"))
    assert (checker.count, checker.urls, checker.models) == (1, {"/v1/chat/completions"}, {"m"})


def test_a_file_is_not_empty_nor_over_its_limit() -> None:
    with pytest.raises(LineError, match="no request"):
        LineValidator().finish()
    checker = LineValidator(max_lines=1)
    checker.feed(raw(custom_id="a"))
    checker.finish()
    with pytest.raises(LineError, match="line 2: more than 1"):
        checker.feed(raw(custom_id="b"))
