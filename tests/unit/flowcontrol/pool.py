"""A synthetic pool in virtual time for decision-level tests: ``slots`` parallel slots, a
service time per request, the concurrency detector as the saturation signal.

Discrete events only (arrivals, completions, eviction confirmations, controller deadlines);
after every event one controller cycle runs, as the adapter would.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from sluiceway.flowcontrol import (
    CapacityView,
    Cycle,
    EndpointSnapshot,
    Finalized,
    FlowController,
    Request,
)
from sluiceway.flowcontrol.saturation import ConcurrencyDetector


@dataclass
class Record:
    request: Request
    arrived: float
    outcome: Finalized | None = None
    started: float | None = None
    ended: float | None = None
    evicted: bool = False


@dataclass
class SyntheticPool:
    controller: FlowController
    slots: int
    service: Callable[[Request], float]
    evict_delay: float = 0.01
    now: float = 0.0
    records: dict[str, Record] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    cycles: list[Cycle] = field(default_factory=list)
    on_dispatch: Callable[[Request, float], None] | None = None
    _events: list[tuple[float, int, str, str]] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    _ticks: set[float] = field(default_factory=set)

    def view(self) -> CapacityView:
        detector = ConcurrencyDetector(max_concurrency=self.slots)
        snap = EndpointSnapshot("pool", inflight_requests=len(self.running))
        return detector.view([snap], self.now)

    def submit(self, request: Request) -> Finalized | None:
        self.records[request.request_id] = Record(request, self.now)
        rejected = self.controller.add(request, self.now)
        if rejected is not None:
            self.records[request.request_id].outcome = rejected
        else:
            self.cycle()
        return rejected

    def at(self, when: float, action: str, arg: str = "") -> None:
        heapq.heappush(self._events, (when, next(self._seq), action, arg))

    def cycle(self) -> Cycle:
        cycle = self.controller.next_dispatches(self.now, self.view())
        self.cycles.append(cycle)
        for done in cycle.dispatched:
            self._start(done)
        for done in cycle.dropped:
            self.records[done.request_id].outcome = done
        for rid in cycle.evict:
            self.records[rid].evicted = True
            self.at(self.now + self.evict_delay, "end", rid)
        return cycle

    def run_until(self, end: float, arrivals: Callable[[float], None] | None = None) -> None:
        """Process events up to ``end``; ``arrivals(t)`` handles events named ``arrive``."""
        while self._events and self._events[0][0] <= end:
            when, _, action, arg = heapq.heappop(self._events)
            self.now = when
            if action == "end":
                self._end(arg)
            elif action == "arrive" and arrivals is not None:
                arrivals(when)
            self._schedule_deadline()
            self.cycle()
        self.now = max(self.now, end)

    def _start(self, done: Finalized) -> None:
        rec = self.records[done.request_id]
        rec.outcome, rec.started = done, self.now
        self.running.add(done.request_id)
        if self.on_dispatch is not None:
            self.on_dispatch(rec.request, self.now)
        self.at(self.now + self.service(rec.request), "end", done.request_id)

    def _end(self, rid: str) -> None:
        if rid not in self.running:
            return
        self.running.discard(rid)
        self.records[rid].ended = self.now
        self.controller.on_finished(rid, self.now)

    def _schedule_deadline(self) -> None:
        due = self.controller.next_deadline()
        if due is not None and due > self.now and due not in self._ticks:
            self._ticks.add(due)
            self.at(due, "tick")
