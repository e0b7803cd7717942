"""ASGI responses that notice a client going away while they wait or stream.

Starlette's streaming response (ASGI spec 2.4) notices a disconnect only at its next write; a
held wait-mode connection writes nothing for minutes, and a stream may wait long for its first
token. These responses listen for ``http.disconnect`` while they work, so a client that leaves
cancels its queued request, or aborts the upstream call, at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from sluiceway.coordinator.forwarding import ForwardedReply
from sluiceway.wire.answer import Answer, send_answer

__all__ = ["RelayResponse", "WaitingResponse"]

T = TypeVar("T")


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _unless_disconnected(work: Awaitable[T], receive: Receive) -> tuple[bool, T | None]:
    """Run ``work`` until it ends or the client leaves: (finished, result)."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, gone):
            if not pending.done():
                pending.cancel()
        await asyncio.gather(task, gone, return_exceptions=True)
    if task.cancelled() or not task.done():
        return False, None
    return True, task.result()


class WaitingResponse(Response):
    """Keeps the connection open while ``outcome()`` works out the answer; ``on_disconnect()``
    runs when the client leaves first."""

    def __init__(
        self,
        outcome: Callable[[], Awaitable[Answer]],
        on_disconnect: Callable[[], Awaitable[None]],
    ) -> None:
        self._outcome = outcome
        self._on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        finished, answer = await _unless_disconnected(self._outcome(), receive)
        if not finished or answer is None:
            await self._on_disconnect()
            return
        await send_answer(send, answer)


class RelayResponse(Response):
    """Streams an upstream reply as it arrives; ``on_close()`` runs however it ends."""

    def __init__(self, reply: ForwardedReply, on_close: Callable[[], Awaitable[None]]) -> None:
        self._reply = reply
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await _unless_disconnected(self._relay(send), receive)
        finally:
            await self._reply.aclose()
            await self._on_close()

    async def _relay(self, send: Send) -> None:
        headers = [(k.lower().encode(), v.encode()) for k, v in self._reply.headers]
        start = {"type": "http.response.start", "status": self._reply.status, "headers": headers}
        await send(start)
        async for chunk in self._reply.chunks():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
