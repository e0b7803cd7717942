"""Pub/Sub calls coalesced per event-loop turn: one RPC for many results, acks or deadlines.

Workers finishing together (their upstream answers arrive in the same loop turn) each ask for
a publish or an ack; :class:`RpcBatcher` sends the items of one turn that share a key (a topic,
a subscription, a subscription and a deadline) in one request of at most ``max_items``, and
hands every caller the outcome of the request its item went in. A caller awaits its own
confirmation, so "acked only after the result publish is confirmed" holds per message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["RpcBatcher"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


@dataclass(slots=True)
class _Pending(Generic[T]):
    item: T
    reply: asyncio.Future[Any] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class RpcBatcher(Generic[K, T]):
    """Coalesces ``submit(key, item)`` calls of one loop turn into ``send(key, items)`` calls.

    ``send`` returns one reply per item (or None for all); an exception fails every item of
    that request.
    """

    def __init__(
        self,
        send: Callable[[K, Sequence[T]], Awaitable[Sequence[Any] | None]],
        *,
        max_items: int = 1000,
    ) -> None:
        self._send = send
        self._max = max_items
        self._queued: dict[K, list[_Pending[T]]] = {}
        self._flushes: set[asyncio.Task[None]] = set()

    async def submit(self, key: K, item: T) -> Any:
        """The reply for ``item`` once its request returned; raises what the request raised."""
        pending = _Pending(item)
        if not self._queued:
            asyncio.get_running_loop().call_soon(self._flush)
        self._queued.setdefault(key, []).append(pending)
        return await pending.reply

    def _flush(self) -> None:
        queued, self._queued = self._queued, {}
        for key, items in queued.items():
            for start in range(0, len(items), self._max):
                task = asyncio.create_task(self._deliver(key, items[start : start + self._max]))
                self._flushes.add(task)
                task.add_done_callback(self._flushes.discard)

    async def _deliver(self, key: K, items: list[_Pending[T]]) -> None:
        try:
            replies = await self._send(key, [p.item for p in items])
        except asyncio.CancelledError:
            for p in items:
                p.reply.cancel()
            raise
        except Exception as exc:  # every caller of this request gets the failure
            for p in items:
                if not p.reply.done():
                    p.reply.set_exception(exc)
            return
        for index, p in enumerate(items):
            if not p.reply.done():
                p.reply.set_result(None if replies is None else replies[index])

    async def aclose(self) -> None:
        """Wait for requests already sent."""
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)
