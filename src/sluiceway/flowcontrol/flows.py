"""A flow: the queue of one tenant at one priority, plus the counters fairness policies keep.

Queues are binary heaps with lazy deletion: an item that leaves without being popped (cancel,
expiry) stays in the heap, is skipped on pop, and the heap is rebuilt once garbage dominates.
"""

from __future__ import annotations

import heapq

from sluiceway.flowcontrol.base import FlowKey, Item, ItemState

__all__ = ["Flow", "HeapEntry", "compact", "has_live", "pop_live"]

# (ordering key, arrival sequence, item): the sequence breaks ties so items never compare.
HeapEntry = tuple[tuple[float, float], int, Item]

_MIN_COMPACT = 64


class Flow:
    """Counters (requests, bytes) are exact at all times; ``heap`` may hold stale entries.

    ``in_ring`` / ``vtime`` / ``version`` belong to the band's fairness policy: whether the
    flow is scheduled, its virtual token counter, and a stamp to invalidate old heap entries.
    """

    __slots__ = (
        "bytes",
        "heap",
        "idle_since",
        "in_ring",
        "inflight",
        "key",
        "queued",
        "version",
        "vtime",
        "weight",
    )

    def __init__(self, key: FlowKey, now: float) -> None:
        self.key = key
        self.heap: list[HeapEntry] = []
        self.queued = 0
        self.bytes = 0
        self.inflight = 0
        self.in_ring = False
        self.vtime = 0.0
        self.version = 0
        self.weight = 1.0
        self.idle_since = now

    @property
    def idle(self) -> bool:
        return self.queued == 0 and self.inflight == 0

    def __repr__(self) -> str:
        return f"Flow({self.key}, queued={self.queued}, inflight={self.inflight})"


def pop_live(heap: list[HeapEntry]) -> Item | None:
    """Pop the first entry whose item is still queued; None when none is left."""
    while heap:
        item = heapq.heappop(heap)[2]
        if item.state is ItemState.QUEUED:
            return item
    return None


def has_live(heap: list[HeapEntry]) -> bool:
    """Drop stale heads; True when a queued item remains."""
    while heap and heap[0][2].state is not ItemState.QUEUED:
        heapq.heappop(heap)
    return bool(heap)


def compact(heap: list[HeapEntry], live: int) -> None:
    """Rebuild ``heap`` in place without stale entries once they outnumber the live ones."""
    if len(heap) < _MIN_COMPACT or len(heap) <= 2 * live:
        return
    heap[:] = [e for e in heap if e[2].state is ItemState.QUEUED]
    heapq.heapify(heap)
