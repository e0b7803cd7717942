"""The quota counter-store protocol and its in-process implementation.

A quota gate (``redis-quota``) keeps one counter per attribute value,
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
from typing import Protocol, runtime_checkable

__all__ = ["MemoryQuotaStore", "QuotaStore", "quota_key"]


def quota_key(prefix: str, attribute: str, value: str) -> str:
    """``<prefix><attribute>:<value>``, e.g. ``quota:team:premium``."""
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


class MemoryQuotaStore:
    """In-process :class:`QuotaStore`: exact within one process, shared by nothing else. With
    no other writers, a key's count is simply its number of live holders."""

    def __init__(self) -> None:
        self._holders: dict[str, dict[str, float]] = {}  # key -> holder -> lease expiry
        self._windows: dict[str, deque[tuple[float, str]]] = {}

    def _live(self, key: str, now: float) -> dict[str, float]:
        holders = self._holders.setdefault(key, {})
        for holder in [h for h, lease in holders.items() if lease < now]:
            del holders[holder]
        return holders

    async def acquire(
        self, key: str, *, holder: str, limit: int, lease_until: float, now: float
    ) -> bool:
        holders = self._live(key, now)
        if holder in holders:
            holders[holder] = max(holders[holder], lease_until)
            return True
        if len(holders) >= limit:
            return False
        holders[holder] = lease_until
        return True

    async def renew(self, key: str, *, holder: str, lease_until: float) -> bool:
        holders = self._holders.get(key, {})
        if holder not in holders:
            return False
        holders[holder] = max(holders[holder], lease_until)
        return True

    async def release(self, key: str, *, holder: str) -> bool:
        return self._holders.get(key, {}).pop(holder, None) is not None

    async def count(self, key: str) -> int:
        return len(self._holders.get(key, {}))

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
