"""The quota counter-store protocol and its in-process implementation.

A quota gate (``redis-quota``, decisions.md 8 and 15a) keeps one counter per attribute value,
e.g. ``quota:team:premium``. The store is the seam between the gate's pure logic and where the
counters live (in process here; Redis and SQLite stores implement the same protocol).

Concurrency mode: ``acquire`` / ``renew`` / ``release`` with one *holder token* per admitted
request and a lease (scaled Unix seconds) that the claim heartbeat renews. Expired holders are
reaped on every acquire, so a crashed processor cannot leak slots forever. In Redis the count
stays a STRING at ``key`` (the live holder count, readable with ``GET``) and the holders a ZSET
at ``key + ":holders"`` (member = holder token, score = lease expiry), both maintained by one
Lua script; the count changes by deltas (INCR on acquire, DECR on release and by the number
reaped) so holder-less INCR/DECR from other writers stay roughly consistent.

Rate-limit mode: ``admit_rate`` over a sliding window with one *unique* member per admission
(upstream used nanosecond timestamps, which collide).

Times: ``now``, ``lease_until`` are scaled Unix seconds, ``window`` scaled seconds, all passed
in by the caller. A Redis store turns durations into key TTLs with its own time scale.
Failures raise :class:`~sluiceway.errors.BrokerError`; the gate turns them into error verdicts.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = ["MemoryQuotaStore", "QuotaStore", "quota_key"]


def quota_key(prefix: str, attribute: str, value: str) -> str:
    """``<prefix><attribute>:<value>``, e.g. ``quota:team:premium`` (contracts section 3)."""
    return f"{prefix}{attribute}:{value}"


@runtime_checkable
class QuotaStore(Protocol):
    """Counters for quota gates, shared by every gate built over the same store."""

    async def acquire(
        self, key: str, *, holder: str, limit: int, lease_until: float, now: float
    ) -> bool:
        """Take one concurrency slot for ``holder`` if fewer than ``limit`` live holders exist.

        Reaps holders whose lease ended before ``now`` first. A holder that already holds a
        slot keeps it (its lease is extended) and gets True: retried acquires are idempotent.
        """
        ...

    async def renew(self, key: str, *, holder: str, lease_until: float) -> bool:
        """Extend ``holder``'s lease; False when it no longer holds a slot (reaped)."""
        ...

    async def release(self, key: str, *, holder: str) -> bool:
        """Give back ``holder``'s slot; False (and no change) when it held none."""
        ...

    async def count(self, key: str) -> int:
        """The live holder count as stored (``GET key`` in Redis)."""
        ...

    async def admit_rate(
        self, key: str, *, member: str, limit: int, window: float, now: float
    ) -> bool:
        """Admit one event if fewer than ``limit`` were admitted in ``(now - window, now]``.

        ``member`` must be unique per admission (e.g. the holder token).
        """
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


@dataclass
class _Counter:
    count: int = 0
    holders: dict[str, float] = field(default_factory=dict)


class MemoryQuotaStore:
    """In-process :class:`QuotaStore`: exact within one process, shared by nothing else."""

    def __init__(self) -> None:
        self._counters: dict[str, _Counter] = {}
        self._windows: dict[str, deque[tuple[float, str]]] = {}

    def _counter(self, key: str) -> _Counter:
        return self._counters.setdefault(key, _Counter())

    def _reap(self, counter: _Counter, now: float) -> None:
        expired = [h for h, lease in counter.holders.items() if lease < now]
        for holder in expired:
            del counter.holders[holder]
        counter.count = max(0, counter.count - len(expired))

    async def acquire(
        self, key: str, *, holder: str, limit: int, lease_until: float, now: float
    ) -> bool:
        counter = self._counter(key)
        self._reap(counter, now)
        if holder in counter.holders:
            counter.holders[holder] = max(counter.holders[holder], lease_until)
            return True
        if counter.count >= limit:
            return False
        counter.holders[holder] = lease_until
        counter.count += 1
        return True

    async def renew(self, key: str, *, holder: str, lease_until: float) -> bool:
        counter = self._counters.get(key)
        if counter is None or holder not in counter.holders:
            return False
        counter.holders[holder] = max(counter.holders[holder], lease_until)
        return True

    async def release(self, key: str, *, holder: str) -> bool:
        counter = self._counters.get(key)
        if counter is None or counter.holders.pop(holder, None) is None:
            return False
        counter.count = max(0, counter.count - 1)
        return True

    async def count(self, key: str) -> int:
        counter = self._counters.get(key)
        return 0 if counter is None else counter.count

    async def admit_rate(
        self, key: str, *, member: str, limit: int, window: float, now: float
    ) -> bool:
        events = self._windows.setdefault(key, deque())
        while events and events[0][0] <= now - window:
            events.popleft()
        if len(events) >= limit:
            return False
        events.append((now, member))
        return True

    async def aclose(self) -> None:
        return None
