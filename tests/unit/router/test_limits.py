"""Request limits: the header check and the declared length (pure), the counting body reader."""

from __future__ import annotations

from typing import Any

import pytest

from sluiceway.errors import ConfigError
from sluiceway.router.limits import BodyTooLarge, RequestLimits, read_body

SMALL = RequestLimits(body_bytes=10, headers=3, header_bytes=8, headers_total_bytes=20)


def test_defaults_match_the_documented_flags() -> None:
    limits = RequestLimits()
    assert (limits.body_bytes, limits.headers) == (10 * 1024 * 1024, 100)
    assert (limits.header_bytes, limits.headers_total_bytes) == (16 * 1024, 64 * 1024)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ([(b"a", b"1")] * 3, None),
        ([(b"a", b"1")] * 4, "more than 3 header fields"),
        ([(b"abcd", b"1234")], None),  # name plus value at the limit
        ([(b"abcd", b"12345")], "a header field is over 8 bytes"),
        ([(b"abc", b"12345"), (b"abc", b"12345"), (b"abc", b"12345")], "over 20 bytes in total"),
    ],
)
def test_header_problem(raw: list[tuple[bytes, bytes]], problem: str | None) -> None:
    found = SMALL.header_problem(raw)
    assert found == problem if problem is None else problem in (found or "")


def test_declared_length() -> None:
    assert SMALL.declared_too_large([(b"content-length", b"11")])
    assert not SMALL.declared_too_large([(b"content-length", b"10")])
    assert not SMALL.declared_too_large([(b"content-length", b"junk")])
    assert not SMALL.declared_too_large([])


def test_a_limit_below_one_names_its_flag() -> None:
    with pytest.raises(ConfigError, match="--max-headers-total-bytes"):
        RequestLimits(headers_total_bytes=0)


def _receive(*messages: dict[str, Any]) -> Any:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    return receive


async def test_read_body_counts_chunks_and_stops_at_the_limit() -> None:
    more = {"type": "http.request", "body": b"12345", "more_body": True}
    last = {"type": "http.request", "body": b"12345"}
    assert await read_body(_receive(more, last), 10) == b"1234512345"
    with pytest.raises(BodyTooLarge):
        await read_body(_receive(more, more, last), 10)
    with pytest.raises(ConnectionResetError):
        await read_body(_receive(more, {"type": "http.disconnect"}), 10)
