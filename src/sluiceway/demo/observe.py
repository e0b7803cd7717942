"""What the model server sees: every start and end of a running request, with its lane.

Subscribes to the simulator's label counts, so every start and end is seen exactly, with no
sampling; occupancy, peaks and orders are computed from the events afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sluiceway.broker.base import Broker, Claim
from sluiceway.clock import Clock
from sluiceway.sim import Engine
from sluiceway.wire.headers import FAIRNESS_ID, OBJECTIVE, REQUEST_ID
from sluiceway.wire.lanes import LANES

__all__ = ["BANDS", "Event", "HandbackCounter", "Timeline", "lane_occupancy", "lane_peaks"]

# lane objective -> router priority band (the guide's InferenceObjectives)
BANDS: dict[str, int] = {lane.key: lane.guide_priority for lane in LANES}


@dataclass(frozen=True)
class Event:
    """One start (+1) or end (-1) at the model server, at scaled time ``at``."""

    at: float
    delta: int
    lane: str
    tenant: str
    request: str


@dataclass
class Timeline:
    """Every start and end seen at the model server since the stack came up."""

    clock: Clock
    events: list[Event] = field(default_factory=list)

    @contextlib.contextmanager
    def recording(self, engine: Engine) -> Iterator[None]:
        def on_change(delta: int, labels: tuple[tuple[str, str], ...]) -> None:
            found = dict(labels)
            lane, tenant = found.get(OBJECTIVE, ""), found.get(FAIRNESS_ID, "")
            request = found.get(REQUEST_ID, "")
            self.events.append(Event(self.clock.now(), delta, lane, tenant, request))

        unsubscribe = engine.labels.subscribe(on_change)
        try:
            yield
        finally:
            unsubscribe()

    def mark(self) -> int:
        """A position; ``since(mark)`` gives the events after it."""
        return len(self.events)

    def since(self, mark: int) -> list[Event]:
        return self.events[mark:]

    def starts(self, mark: int = 0) -> list[Event]:
        return [e for e in self.events[mark:] if e.delta > 0]

    def restarted(self, mark: int = 0) -> dict[str, list[str]]:
        """Requests that started more than once (cut short, then retried): id -> lanes."""
        lanes: dict[str, list[str]] = {}
        for e in self.starts(mark):
            if e.request:
                lanes.setdefault(e.request, []).append(e.lane)
        return {r: seen for r, seen in lanes.items() if len(seen) > 1}

    def average_running(self, start: float, end: float, mark: int = 0) -> float:
        """Time-weighted mean of all running requests over [start, end]."""
        if end <= start:
            return 0.0
        level, last, area = 0, start, 0.0
        for e in self.events[mark:]:
            if e.at > start:
                area += level * (min(e.at, end) - last)
                last = min(e.at, end)
            if e.at >= end:
                break
            level += e.delta
        area += level * max(0.0, end - last)
        return area / (end - start)


def lane_peaks(events: list[Event]) -> dict[str, int]:
    """The most requests of each lane running at once."""
    level: dict[str, int] = {}
    peak: dict[str, int] = {}
    for e in events:
        level[e.lane] = level.get(e.lane, 0) + e.delta
        peak[e.lane] = max(peak.get(e.lane, 0), level[e.lane])
    return peak


def lane_occupancy(events: list[Event]) -> list[tuple[float, dict[str, int]]]:
    """Running requests per lane after each event: (time, {lane: count})."""
    level: dict[str, int] = {}
    out: list[tuple[float, dict[str, int]]] = []
    for e in events:
        level[e.lane] = level.get(e.lane, 0) + e.delta
        out.append((e.at, dict(level)))
    return out


class HandbackCounter:
    """The processor's broker, counting the claims handed back to the queue (broker churn):
    a parked worker keeps its request, a refused one goes back."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.count = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._broker, name)

    async def release(self, claim: Claim) -> bool:
        self.count += 1
        return await self._broker.release(claim)

    async def retry_after(self, claim: Claim, *, member: str, due: float) -> bool:
        self.count += 1
        return await self._broker.retry_after(claim, member=member, due=due)
