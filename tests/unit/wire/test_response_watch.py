"""What went out on a raw ASGI send: the head, the first body byte's time, nothing more."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from sluiceway.wire.response_watch import ResponseWatch, watch_response


async def test_the_head_and_the_first_body_byte_are_noted_and_everything_passes() -> None:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    watch = ResponseWatch()
    watched = watch_response(send, watch)
    head = [(b"content-type", b"text/event-stream")]
    await watched({"type": "http.response.start", "status": 200, "headers": head})
    assert (watch.status, list(watch.headers), watch.first_byte_at) == (200, head, 0.0)
    await watched({"type": "http.response.body", "body": b"", "more_body": True})
    assert watch.first_byte_at == 0.0  # an empty chunk is no byte
    await watched({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
    first = watch.first_byte_at
    await watched({"type": "http.response.body", "body": b"data: 2\n\n"})
    assert first > 0 and watch.first_byte_at == first
    assert [m.get("body") for m in sent] == [None, b"", b"data: 1\n\n", b"data: 2\n\n"]


async def test_nothing_sent_leaves_the_watch_empty() -> None:
    async def send(message: MutableMapping[str, Any]) -> None:
        raise AssertionError("not called")

    watch = ResponseWatch()
    watch_response(send, watch)
    assert (watch.status, tuple(watch.headers), watch.first_byte_at) == (0, (), 0.0)
