"""``token-fair-fairness-policy`` (sluiceway's own): virtual token counters, after VTC.

Each flow of a band has a counter of the weighted tokens it was served. The band serves the
backlogged flow with the smallest counter. At dispatch the flow is charged
``input_weight x prompt_tokens + output_weight x max_tokens`` (divided by the flow's weight);
at completion the charge is reconciled with the response's ``usage``. A flow that becomes
backlogged again is lifted to the current minimum (the smallest counter among backlogged
flows, or the last served counter when none is), so idling never banks credit.

Bound (VTC, Sheng et al. OSDI'24): while two flows are both backlogged, the tokens they are
served over any interval differ by at most 2 x U, U = the largest single-request charge.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from sluiceway.flowcontrol.base import Item, Usage
from sluiceway.flowcontrol.flows import Flow, compact, has_live, pop_live

__all__ = ["TokenFair", "TokenFairBand"]

# (counter, arrival stamp, flow version, flow)
_Slot = tuple[float, int, int, Flow]


class TokenFairBand:
    __slots__ = ("_floor", "_heap", "_policy", "_stamp")

    def __init__(self, policy: TokenFair) -> None:
        self._policy = policy
        self._heap: list[_Slot] = []
        self._floor = 0.0
        self._stamp = 0

    @property
    def floor(self) -> float:
        """The current minimum: counter of the last flow served (never decreases)."""
        return self._floor

    def push(self, item: Item) -> None:
        flow = item.flow
        heapq.heappush(flow.heap, (item.key, item.seq, item))
        if not flow.in_ring:
            flow.vtime = max(flow.vtime, self._current_min())
            flow.in_ring = True
            self._schedule(flow)

    def pop(self) -> Item | None:
        while self._heap:
            vtime, _, version, flow = heapq.heappop(self._heap)
            if version != flow.version or not flow.in_ring:
                continue
            item = pop_live(flow.heap)
            if item is None:
                flow.in_ring = False
                continue
            self._floor = max(self._floor, vtime)
            self._charge(flow, item)
            return item
        return None

    def discard(self, item: Item) -> None:
        flow = item.flow
        if flow.queued == 0 and flow.in_ring:
            # Emptied by cancellation or expiry: it is idle now, so its next arrival is lifted.
            flow.in_ring = False
            flow.version += 1
            flow.heap.clear()
            return
        compact(flow.heap, flow.queued)

    def settle(self, item: Item, usage: Usage | None) -> None:
        if usage is None:
            return
        actual = self._policy.charge_of(usage.prompt_tokens, usage.completion_tokens)
        flow = item.flow
        flow.vtime += (actual - item.charged) / flow.weight
        item.charged = actual
        if flow.in_ring:
            self._schedule(flow)

    def _charge(self, flow: Flow, item: Item) -> None:
        req = item.request
        item.charged = self._policy.charge_of(req.prompt_tokens, req.max_tokens)
        flow.vtime += item.charged / flow.weight
        if has_live(flow.heap):
            self._schedule(flow)
        else:
            flow.in_ring = False

    def _schedule(self, flow: Flow) -> None:
        flow.version += 1
        self._stamp += 1
        heapq.heappush(self._heap, (flow.vtime, self._stamp, flow.version, flow))

    def _current_min(self) -> float:
        heap = self._heap
        while heap and (heap[0][2] != heap[0][3].version or not heap[0][3].in_ring):
            heapq.heappop(heap)
        return heap[0][0] if heap else self._floor


@dataclass(frozen=True, slots=True)
class TokenFair:
    """Parameters: token weights (VTC's defaults: input 1, output 2)."""

    input_weight: float = 1.0
    output_weight: float = 2.0
    name: str = "token-fair-fairness-policy"

    def charge_of(self, prompt_tokens: int, output_tokens: int) -> float:
        """Weighted token cost of one request."""
        return self.input_weight * prompt_tokens + self.output_weight * output_tokens

    def new_band(self) -> TokenFairBand:
        return TokenFairBand(self)
