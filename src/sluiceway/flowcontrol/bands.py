"""Priority bands: all flows of one priority, their counters and their fairness state.

Bands come from static settings (band 0 always) and from the priorities of objectives; requests
never create bands. Dispatch walks bands in priority order, strictly.
"""

from __future__ import annotations

from sluiceway.flowcontrol.base import BandQueue, FlowKey
from sluiceway.flowcontrol.flows import Flow
from sluiceway.flowcontrol.settings import BandSettings

__all__ = ["Band"]


class Band:
    """Counters are exact: ``queued`` / ``bytes`` over queued items, ``inflight`` over
    dispatched-but-unfinished ones, ``charge`` the fairness charge of those (token-fair's
    weighted tokens; 0 for the other policies). ``static`` bands are never removed."""

    __slots__ = ("bytes", "charge", "flows", "inflight", "queue", "queued", "settings", "static")

    def __init__(self, settings: BandSettings, *, static: bool) -> None:
        self.settings = settings
        self.static = static
        self.queue: BandQueue = settings.fairness.new_band()
        self.flows: dict[str, Flow] = {}
        self.queued = 0
        self.bytes = 0
        self.inflight = 0
        self.charge = 0.0

    @property
    def priority(self) -> int:
        return self.settings.priority

    @property
    def idle(self) -> bool:
        return self.queued == 0 and self.inflight == 0

    def flow(self, fairness_id: str, now: float) -> Flow:
        """The flow of ``fairness_id``, created on first use."""
        flow = self.flows.get(fairness_id)
        if flow is None:
            flow = self.flows[fairness_id] = Flow(FlowKey(fairness_id, self.priority), now)
        return flow

    def fits(self, size: int) -> bool:
        """Whether one more request of ``size`` bytes stays within the band's caps."""
        s = self.settings
        return self.bytes + size <= s.max_bytes and self.queued + 1 <= s.max_requests

    def collect(self, now: float, idle_for: float) -> int:
        """Forget flows idle since at least ``idle_for`` seconds; returns how many."""
        stale = [
            fid
            for fid, f in self.flows.items()
            if f.idle and not f.in_ring and now - f.idle_since >= idle_for
        ]
        for fid in stale:
            del self.flows[fid]
        return len(stale)

    def __repr__(self) -> str:
        return f"Band({self.priority}, queued={self.queued}, inflight={self.inflight})"
