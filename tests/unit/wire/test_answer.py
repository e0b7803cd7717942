"""The one shape of an answer sluiceway makes itself: JSON unless said otherwise, extra headers
appended, and sent whole on raw ASGI with its length."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from sluiceway.wire.answer import JSON_TYPE, Answer, send_answer


def test_json_by_default_and_extra_headers_keep_it() -> None:
    answer = Answer(202, b"{}").with_headers(("x-request-id", "abc"))
    assert answer.headers == (("content-type", JSON_TYPE), ("x-request-id", "abc"))
    text = Answer(429, b"evicted", (("content-type", "text/plain"),))
    assert dict(text.headers)["content-type"] == "text/plain"


async def test_an_answer_goes_out_whole_with_its_length() -> None:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    body = b'{"error":{"message":"saturated"}}'
    await send_answer(send, Answer(429, body).with_headers(("x-caf\u00e9", "v")))
    start, payload = sent
    assert start["status"] == 429
    assert (b"content-length", str(len(body)).encode()) in start["headers"]
    assert (b"content-type", b"application/json") in start["headers"]
    assert (b"x-caf\xe9", b"v") in start["headers"]  # latin-1, as HTTP headers are
    assert payload == {"type": "http.response.body", "body": body}
