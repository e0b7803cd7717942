"""Queue-wait budgets under two regimes: the pool has endpoints, or it is empty.

With endpoints an item may wait its effective TTL (outcome EvictedTTL); while the pool is empty
it may wait the no-endpoint budget (EvictedNoEndpoints); a budget of 0 disables expiry in that
regime. Waiting is charged from ``max(enqueue time, last regime change)``, so a regime change
grants a fresh budget (a pool scaling up from zero does not shed what just became
dispatchable). Expiry is exact to the cycle that runs at or after the due time; the adapter
wakes at :meth:`Expiry.next_deadline`, no periodic sweep.
"""

from __future__ import annotations

import heapq

from sluiceway.flowcontrol.base import Item, ItemState

__all__ = ["Expiry"]

# (lower bound of the due time, arrival sequence, item)
_Due = tuple[float, int, Item]
_MIN_COMPACT = 256


class Expiry:
    """Keeps, per regime, a heap whose keys are lower bounds of each item's due time: keys
    only grow (regime changes postpone), so a popped entry is either due or re-pushed."""

    __slots__ = ("_empty_ttl", "_heaps", "pool_empty", "since")

    def __init__(self, empty_ttl: float) -> None:
        self._empty_ttl = empty_ttl
        self._heaps: dict[bool, list[_Due]] = {False: [], True: []}
        self.pool_empty = False
        self.since = float("-inf")

    def observe(self, now: float, pool_empty: bool) -> None:
        """Record the pool's regime as seen at ``now``."""
        if pool_empty != self.pool_empty:
            self.pool_empty = pool_empty
            self.since = now

    def track(self, item: Item) -> None:
        if item.ttl > 0:
            heapq.heappush(self._heaps[False], (item.enqueue_time + item.ttl, item.seq, item))
        if self._empty_ttl > 0:
            heapq.heappush(self._heaps[True], (item.enqueue_time + self._empty_ttl, item.seq, item))

    def due(self, now: float) -> list[Item]:
        """Queued items whose budget in the current regime is spent at ``now``."""
        heap = self._heaps[self.pool_empty]
        out: list[Item] = []
        while heap and heap[0][0] <= now:
            _, seq, item = heapq.heappop(heap)
            if item.state is not ItemState.QUEUED:
                continue
            due = self._due_time(item)
            if due <= now:
                out.append(item)
            else:
                heapq.heappush(heap, (due, seq, item))
        return out

    def next_deadline(self) -> float | None:
        """Earliest possible expiry in the current regime (a lower bound), or None."""
        heap = self._heaps[self.pool_empty]
        while heap and heap[0][2].state is not ItemState.QUEUED:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def compact(self, live: int) -> None:
        """Drop entries of items no longer queued once they dominate a heap."""
        for key, heap in self._heaps.items():
            if len(heap) >= _MIN_COMPACT and len(heap) > 2 * live:
                kept = [e for e in heap if e[2].state is ItemState.QUEUED]
                heapq.heapify(kept)
                self._heaps[key] = kept

    def _due_time(self, item: Item) -> float:
        budget = self._empty_ttl if self.pool_empty else item.ttl
        return max(item.enqueue_time, self.since) + budget
