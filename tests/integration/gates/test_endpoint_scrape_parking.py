"""Exact parking: endpoint-scrape with counted admission on the simulator's own /metrics keeps
the requests in flight at or under SAT_CAP at every instant, and parked workers re-evaluate
only on signal changes, finishes and the backstop (no polling)."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry
from saturation_rig import (
    SIM,
    CountingBroker,
    collect,
    publish,
    settings,
    trace_of,
)

from sluiceway.clock import RealClock
from sluiceway.gates.base import Decision, Gate, GateRequest, Holdings
from sluiceway.gates.context import SIGNALS_SERVICE
from sluiceway.processor.service import Processor
from sluiceway.signals.refresher import SignalHub
from sluiceway.sim import running_simulator

pytestmark = pytest.mark.serial

SAT_CAP = 4
SCALE = 5.0
REQUESTS = 24


class CountingGate:
    """Counts evaluations of the pool gate it wraps."""

    def __init__(self, inner: Gate) -> None:
        self.inner = inner
        self.evaluations = 0

    async def budget(self, now: float) -> float:
        self.evaluations += 1
        return await self.inner.budget(now)

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        return await self.inner.apply(request, holdings, now)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_counted_admission_never_exceeds_sat_cap() -> None:
    clock = RealClock(scale=SCALE)
    async with running_simulator(SIM, clock=clock) as sim:
        trace = trace_of(sim)
        scrape = {
            "url": sim.urls[0] + "/metrics",
            "metric": "vllm:num_requests_running",
            "max_count_per_pod": SAT_CAP,
            "admission": "counted",
        }
        gate = {"gate": json.dumps({"gate_type": "endpoint-scrape", "gate_params": scrape})}
        config = settings(sim.urls[0], "", "wait-on-refuse", gate)
        hub = SignalHub(clock, config.prometheus)
        broker = CountingBroker()
        proc = Processor(
            config,
            broker,
            clock=clock,
            registry=CollectorRegistry(),
            services={SIGNALS_SERVICE: hub},
        )
        pool = proc.pools["teams"]
        assert pool.gate is not None
        counting = CountingGate(pool.gate)
        pool.gate = counting
        (refresher,) = hub.refreshers.values()
        changes: list[int] = []
        refresher.subscribe(lambda: changes.append(1))
        started = clock.now()
        await proc.start()
        try:
            await publish(broker, clock, "batch", REQUESTS)
            results = await collect(broker, REQUESTS, within=60)
        finally:
            await proc.stop()
            await hub.aclose()
        elapsed = clock.now() - started
    assert all(r.status_code == 200 for r in results)
    assert max(level for _, level in trace.in_flight()) <= SAT_CAP
    assert broker.releases == 0 and broker.retries == 0
    backstop_ticks = elapsed / 1.0 + 1  # the park backstop is one scaled second
    bound = REQUESTS + config.pools[0].workers * (len(changes) + REQUESTS + backstop_ticks + 1)
    assert counting.evaluations <= bound
