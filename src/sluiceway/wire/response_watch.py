"""What went out on a raw ASGI ``send``: the response head and when the first body byte left.

A server wraps ``send`` once, outermost, and reads the :class:`ResponseWatch` when its handler
returns (the access log, the HTTP metrics and the spans are made from it). The wrapper only
stores: it calls nothing but the ``send`` it wraps, so the code below it never calls back up
into whoever reads the watch. Standard library only.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ResponseWatch", "watch_response"]

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(slots=True)
class ResponseWatch:
    """``status`` and ``headers`` of the response head (0 and empty: none went out);
    ``first_byte_at``: ``time.perf_counter()`` when the first body byte left (0.0: none)."""

    status: int = 0
    headers: Sequence[tuple[bytes, bytes]] = ()
    first_byte_at: float = 0.0


def watch_response(send: Send, watch: ResponseWatch) -> Send:
    """``send``, noting on ``watch`` the response head and the first body byte."""

    async def watched(message: MutableMapping[str, Any]) -> None:
        if not watch.first_byte_at:
            kind = message["type"]
            if kind == "http.response.start":
                watch.status = int(message["status"])
                watch.headers = message.get("headers") or ()
            elif kind == "http.response.body" and message.get("body"):
                watch.first_byte_at = time.perf_counter()
        await send(message)

    return watched
