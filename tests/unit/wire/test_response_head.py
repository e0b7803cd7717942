"""Headers stamped on a response head, whoever sends it."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from sluiceway.wire.response_head import stamp_head


async def _through(
    head: list[tuple[bytes, bytes]], extra: tuple[tuple[str, str], ...], *, replace: bool
) -> list[MutableMapping[str, Any]]:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    stamped = stamp_head(send, extra, replace=replace)
    await stamped({"type": "http.response.start", "status": 200, "headers": head})
    await stamped({"type": "http.response.body", "body": b"x"})
    return sent


async def test_replace_leaves_exactly_the_given_value() -> None:
    head = [(b"x-request-id", b"upstream"), (b"content-type", b"text/plain")]
    sent = await _through(head, (("x-request-id", "mine"),), replace=True)
    assert sent[0]["headers"] == [(b"content-type", b"text/plain"), (b"x-request-id", b"mine")]
    assert sent[1] == {"type": "http.response.body", "body": b"x"}  # bodies pass untouched
    assert head == [(b"x-request-id", b"upstream"), (b"content-type", b"text/plain")]


async def test_without_replace_a_header_present_is_kept() -> None:
    mine = (("x-request-id", "mine"),)
    sent = await _through([(b"X-Request-Id", b"theirs")], mine, replace=False)
    assert sent[0]["headers"] == [(b"X-Request-Id", b"theirs")]
    added = await _through([], (("x-request-id", "mine"), ("retry-after", "3")), replace=False)
    assert added[0]["headers"] == [(b"x-request-id", b"mine"), (b"retry-after", b"3")]
