"""``round-robin-fairness-policy``: one dispatch turn per active flow, in a ring.

The ring holds only flows with queued work (O(1) per pick), unlike upstream, which sorts every
registered flow of the band on each pick. A flow joins the ring's tail when it becomes active
and returns to the tail after each turn; so turns follow activation order, not id order.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

from sluiceway.flowcontrol.base import Item, Usage
from sluiceway.flowcontrol.flows import Flow, compact, has_live, pop_live

__all__ = ["RoundRobin", "RoundRobinBand"]


class RoundRobinBand:
    __slots__ = ("_ring",)

    def __init__(self) -> None:
        self._ring: deque[Flow] = deque()

    def push(self, item: Item) -> None:
        flow = item.flow
        heapq.heappush(flow.heap, (item.key, item.seq, item))
        if not flow.in_ring:
            flow.in_ring = True
            self._ring.append(flow)

    def pop(self) -> Item | None:
        ring = self._ring
        while ring:
            flow = ring.popleft()
            item = pop_live(flow.heap)
            if item is not None and has_live(flow.heap):
                ring.append(flow)
            else:
                flow.in_ring = False
            if item is not None:
                return item
        return None

    def discard(self, item: Item) -> None:
        flow = item.flow
        compact(flow.heap, flow.queued)

    def settle(self, item: Item, usage: Usage | None) -> None:
        return None


@dataclass(frozen=True, slots=True)
class RoundRobin:
    name: str = "round-robin-fairness-policy"

    def new_band(self) -> RoundRobinBand:
        return RoundRobinBand()
