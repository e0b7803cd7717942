"""The raw member's limits (issue 26): a hostile entry fails as EntryError with a reason."""

from __future__ import annotations

import json

import pytest

from sluiceway.wire import EntryError, decode_envelope
from sluiceway.wire.member import (
    MAX_NESTING,
    derive_request_token,
    header_problem,
    member_bytes,
    member_problem,
)


def _entry(payload: str = "1", headers: str = "{}") -> str:
    return f'{{"data":{{"id":"a","deadline":5,"headers":{headers},"payload":{payload}}}}}'


@pytest.mark.parametrize("depth", [50_000, 100_000])
def test_deep_nesting_is_unreadable_not_a_recursion_error(depth: int) -> None:
    for member in ("[" * depth + "]" * depth, _entry("[" * depth + "]" * depth)):
        with pytest.raises(EntryError, match="nested deeper than") as info:
            decode_envelope(member)
        assert not info.value.readable


def test_interleaved_deep_nesting_is_caught_too() -> None:
    deep = '{"a":[' * 300 + "1" + "]}" * 300
    assert member_problem(_entry(deep)) == f"JSON nested deeper than {MAX_NESTING} levels"


def test_nesting_up_to_the_limit_decodes() -> None:
    depth = MAX_NESTING - 3  # data and the top object count too
    env = decode_envelope(_entry("[1," * depth + "1" + "]" * depth))
    assert env.id == "a"


def test_brackets_inside_strings_do_not_count() -> None:
    assert member_problem(_entry(json.dumps("[" * 10_000 + '\\"{'))) is None


def test_bytes_that_are_not_utf8_are_unreadable_with_a_stable_token() -> None:
    raw = _entry('"\xff"').encode("latin-1")
    as_redis_gives_it = raw.decode("utf-8", "surrogateescape")
    for member in (raw, as_redis_gives_it):
        with pytest.raises(EntryError, match="not UTF-8") as info:
            decode_envelope(member)
        assert info.value.request_token == derive_request_token(raw)
    assert member_bytes(as_redis_gives_it) == raw


def test_a_lone_surrogate_escape_is_unreadable_but_a_pair_is_fine() -> None:
    with pytest.raises(EntryError, match="lone UTF-16 surrogate"):
        decode_envelope(_entry('"\\ud800"'))
    assert decode_envelope(_entry('"\\ud83d\\ude00"')).data.payload == "\U0001f600"
    assert decode_envelope(_entry('"\\\\ud800"')).data.payload == "\\ud800"


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"x-a": "v\r\nx-injected: 1"}, "data.headers.x-a"),
        ({"x-a": "v\x00"}, "data.headers.x-a"),
        ({"x a": "v"}, "'x a'"),
        ({"": "v"}, "''"),
        ({"x:a": "v"}, "'x:a'"),
    ],
)
def test_headers_http_cannot_carry_are_named(headers: dict[str, str], named: str) -> None:
    problem = header_problem(headers)
    assert problem is not None and named in problem
    with pytest.raises(EntryError) as info:
        decode_envelope(_entry(headers=json.dumps(headers)))
    assert info.value.readable and info.value.entry_id == "a" and named in info.value.message


def test_usual_headers_pass() -> None:
    assert header_problem({"x-request-id": "r 1\tb", "Authorization": "Bearer é"}) is None
