"""``global-strict-fairness-policy``: the band is one logical queue in ordering-policy order.

No tenant isolation: one tenant can starve the others of its band (upstream's default). One
heap per band, so a pick is O(log n) instead of a scan over every active flow.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from sluiceway.flowcontrol.base import Item, Usage
from sluiceway.flowcontrol.flows import HeapEntry, compact, pop_live

__all__ = ["GlobalStrict", "GlobalStrictBand"]


class GlobalStrictBand:
    """All queued items of the band in one heap; flows are only counters here."""

    __slots__ = ("_heap", "_live")

    def __init__(self) -> None:
        self._heap: list[HeapEntry] = []
        self._live = 0

    def push(self, item: Item) -> None:
        heapq.heappush(self._heap, (item.key, item.seq, item))
        self._live += 1

    def pop(self) -> Item | None:
        item = pop_live(self._heap)
        if item is not None:
            self._live -= 1
        return item

    def discard(self, item: Item) -> None:
        self._live -= 1
        compact(self._heap, self._live)

    def settle(self, item: Item, usage: Usage | None) -> None:
        return None


@dataclass(frozen=True, slots=True)
class GlobalStrict:
    name: str = "global-strict-fairness-policy"

    def new_band(self) -> GlobalStrictBand:
        return GlobalStrictBand()
