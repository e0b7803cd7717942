"""A TTL cache in front of a source: within ``ttl`` scaled seconds of the last read, the same
reading (errors included) is answered again; ``ttl`` 0 reads through every time."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from sluiceway.clock import Clock
from sluiceway.signals.base import MetricSource, Reading

__all__ = ["CachedSource"]


class CachedSource:
    """Concurrent readers of an expired entry share one read of the inner source."""

    def __init__(self, inner: MetricSource, *, ttl: float, clock: Clock) -> None:
        self._inner = inner
        self._ttl = ttl
        self._clock = clock
        self._cached: Reading | None = None
        self._lock = asyncio.Lock()

    @property
    def key(self) -> str:
        return self._inner.key

    def _fresh(self) -> Reading | None:
        cached = self._cached
        if cached is not None and self._clock.now() - cached.at < self._ttl:
            return cached
        return None

    async def read(self) -> Reading:
        fresh = self._fresh()
        if fresh is not None:
            return fresh
        async with self._lock:
            fresh = self._fresh()
            if fresh is None:
                fresh = replace(await self._inner.read(), at=self._clock.now())
                self._cached = fresh
            return fresh

    async def aclose(self) -> None:
        await self._inner.aclose()
