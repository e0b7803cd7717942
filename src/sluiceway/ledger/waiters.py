"""Requests waiting for a lease, in order within each band, higher bands served first."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Mapping

__all__ = ["LeaseWaiters"]


class LeaseWaiters:
    """A FIFO of futures per band; cancelled ones (the request ended first) are skipped."""

    def __init__(self) -> None:
        self._by_band: dict[int, collections.deque[asyncio.Future[None]]] = {}

    def add(self, band: int) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._by_band.setdefault(band, collections.deque()).append(fut)
        return fut

    def counts(self) -> dict[int, int]:
        """Live waiters by band (and forget the cancelled ones at the heads)."""
        out = {}
        for band, queue in list(self._by_band.items()):
            while queue and queue[0].done():
                queue.popleft()
            live = sum(1 for f in queue if not f.done())
            if live:
                out[band] = live
            else:
                del self._by_band[band]
        return out

    def __len__(self) -> int:
        return sum(self.counts().values())

    def grant(self, by_band: Mapping[int, int]) -> dict[int, int]:
        """Resolve up to ``by_band[b]`` waiters of each band, oldest first; those resolved,
        by band."""
        given: dict[int, int] = {}
        for band, count in by_band.items():
            queue = self._by_band.get(band)
            while count > 0 and queue:
                fut = queue.popleft()
                if not fut.done():
                    fut.set_result(None)
                    count -= 1
                    given[band] = given.get(band, 0) + 1
        return given

    def grant_while(self, allowed: Callable[[int], bool]) -> dict[int, int]:
        """Resolve waiters, higher bands first, while ``allowed(band)``; those resolved, by
        band."""
        given: dict[int, int] = {}
        for band in sorted(self._by_band, reverse=True):
            queue = self._by_band[band]
            while queue:
                if queue[0].done():
                    queue.popleft()
                    continue
                if not allowed(band):
                    return given
                queue.popleft().set_result(None)
                given[band] = given.get(band, 0) + 1
        return given

    def cancel_all(self) -> None:
        for queue in self._by_band.values():
            for fut in queue:
                fut.cancel()
        self._by_band.clear()
