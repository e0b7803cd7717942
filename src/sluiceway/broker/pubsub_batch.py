"""Pub/Sub calls coalesced per event-loop turn: one RPC for many results, acks or deadlines.

Workers finishing together (their upstream answers arrive in the same loop turn) each ask for
a publish or an ack; :class:`RpcBatcher` sends the items of one turn that share a key (a topic,
a subscription, a subscription and a deadline) in one request of at most ``max_items``, with a
bounded number of requests in flight per key, and hands every caller the outcome of the
request its item went in. A caller awaits its own
confirmation, so "acked only after the result publish is confirmed" holds per message.
"""

from __future__ import annotations

import asyncio
from collections import Counter
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
    """Coalesces ``submit(key, item)`` calls into ``send(key, items)`` requests.

    Items submitted in one loop turn share a request per key (at most ``max_items`` each).
    At most ``max_in_flight`` requests per key run at once; items submitted meanwhile wait and
    go out together when one returns, so batches grow with the load instead of the number of
    requests. ``send`` returns one reply per item (or None for all); an exception fails every
    item of that request.
    """

    def __init__(
        self,
        send: Callable[[K, Sequence[T]], Awaitable[Sequence[Any] | None]],
        *,
        max_items: int = 1000,
        max_in_flight: int = 4,
    ) -> None:
        self._send = send
        self._max = max_items
        self._max_in_flight = max_in_flight
        self._queued: dict[K, list[_Pending[T]]] = {}
        self._in_flight: Counter[K] = Counter()
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, key: K, item: T) -> Any:
        """The reply for ``item`` once its request returned; raises what the request raised."""
        pending = _Pending(item)
        self._queued.setdefault(key, []).append(pending)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        return await pending.reply

    def _flush(self) -> None:
        self._scheduled = False
        for key in list(self._queued):
            self._start(key)

    def _start(self, key: K) -> None:
        while self._queued.get(key) and self._in_flight[key] < self._max_in_flight:
            waiting = self._queued[key]
            items, self._queued[key] = waiting[: self._max], waiting[self._max :]
            if not self._queued[key]:
                del self._queued[key]
            self._in_flight[key] += 1
            task = asyncio.create_task(self._deliver(key, items))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

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
        else:
            for index, p in enumerate(items):
                if not p.reply.done():
                    p.reply.set_result(None if replies is None else replies[index])
        finally:
            self._in_flight[key] -= 1
            if not self._scheduled:  # items that waited for a free request go out now
                self._start(key)

    async def aclose(self) -> None:
        """Wait for requests already sent."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
