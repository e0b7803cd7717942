"""One notion of time for the whole system (docs/design-rules.md rule 1).

Every duration in sluiceway (simulated latency, backoff, leases, TTLs, cache ages) is in
*scaled* seconds and goes through a :class:`Clock`. Production runs at scale 1; tests and
benchmarks speed the world up with ``--time-scale S``: scaled now = anchor + (wall - anchor) x S.
Pure decision logic never reads a clock; the async shells pass ``now`` in.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "RealClock", "VirtualClock"]


@runtime_checkable
class Clock(Protocol):
    """Scaled time. ``now()`` is Unix seconds; ``sleep`` takes scaled seconds."""

    @property
    def scale(self) -> float: ...

    def now(self) -> float: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...

    def to_wall(self, seconds: float) -> float:
        """A scaled duration as wall seconds (e.g. for Redis key TTLs)."""
        ...


class RealClock:
    """Wall time, optionally sped up by ``scale`` around ``anchor`` (Unix seconds)."""

    def __init__(self, scale: float = 1.0, anchor: float | None = None) -> None:
        if scale <= 0:
            raise ValueError(f"time scale must be > 0, got {scale}")
        self._scale = float(scale)
        self._anchor = time.time() if anchor is None else float(anchor)
        self._mono_anchor = time.monotonic()
        if self._scale == 1.0:
            # Scaled time is wall time: hot paths read the clocks without a frame per read.
            self.now = time.time  # type: ignore[method-assign]
            self.monotonic = time.monotonic  # type: ignore[method-assign]

    @property
    def scale(self) -> float:
        return self._scale

    @property
    def anchor(self) -> float:
        return self._anchor

    def now(self) -> float:
        return self._anchor + (time.time() - self._anchor) * self._scale

    def monotonic(self) -> float:
        return self._mono_anchor + (time.monotonic() - self._mono_anchor) * self._scale

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self._scale)

    def to_wall(self, seconds: float) -> float:
        return seconds / self._scale

    def from_wall(self, seconds: float) -> float:
        """A wall duration as scaled seconds."""
        return seconds * self._scale


class VirtualClock:
    """Time that moves only when told to; sleepers wake as ``advance`` passes their deadline.

    For tests of async shells: deterministic, instant, no wall-clock reads.
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = float(start)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    @property
    def scale(self) -> float:
        return 1.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._now

    def to_wall(self, seconds: float) -> float:
        return seconds

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    def next_wakeup(self) -> float | None:
        """When the earliest sleeper is due, or None."""
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose deadline has passed."""
        if seconds < 0:
            raise ValueError("virtual time cannot go backwards")
        self.set(self._now + seconds)

    def set(self, when: float) -> None:
        self._now = max(self._now, when)
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)

    async def run_until_idle(self, limit: float = 3600.0) -> None:
        """Let tasks run, jumping to each next sleeper until none remain or ``limit`` passes."""
        end = self._now + limit
        while True:
            for _ in range(20):
                await asyncio.sleep(0)
            due = self.next_wakeup()
            if due is None or due > end:
                return
            self.set(due)
