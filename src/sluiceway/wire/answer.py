"""A complete HTTP answer sluiceway makes itself, and how it goes out on raw ASGI.

One shape for the router's drops and errors and the coordinator's answers (202 pending, stored
results, the OpenAI error envelope). The upstream's streamed replies are not answers: they are
relayed as they come.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["JSON_TYPE", "Answer", "send_answer"]

JSON_TYPE: Final = "application/json"
_JSON_HEADERS: Final = (("content-type", JSON_TYPE),)

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Answer:
    """Status, body, and the headers (content type included; JSON unless said otherwise)."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = _JSON_HEADERS

    def with_headers(self, *extra: tuple[str, str]) -> Answer:
        return Answer(self.status, self.body, (*self.headers, *extra))

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """ASGI headers, ``content-length`` added."""
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers]
        raw.append((b"content-length", str(len(self.body)).encode()))
        return raw


async def send_answer(send: Send, answer: Answer) -> None:
    """Send ``answer`` whole on a raw ASGI ``send``."""
    await send(
        {"type": "http.response.start", "status": answer.status, "headers": answer.raw_headers()}
    )
    await send({"type": "http.response.body", "body": answer.body})
