"""Scenario D: tier-priority-admission over prometheus-saturation reading the router's
``llm_d_epp_flow_control_pool_saturation`` (effective stage) through a real Prometheus.

While saturated: reserved requests park, interactive overflow is shed with a 429 payload,
batch overflow goes back to the broker. When the pool frees, everything left completes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from saturation_exporter import saturation_exporter
from saturation_rig import (
    POOL,
    SIM,
    Budgets,
    CountingBroker,
    Env,
    collect,
    processor,
    publish,
    settings,
    trace_of,
)

from sluiceway.clock import RealClock
from sluiceway.localservices import PrometheusServer
from sluiceway.sim import running_simulator
from sluiceway.wire import ErrorCode

pytestmark = [pytest.mark.prometheus, pytest.mark.serial]

GATE = {
    "saturation_gate": "prometheus-saturation",
    "saturation_gate_params": json.dumps({"pool": POOL, "threshold": "0.8"}),
    "tier_label": "tier",
}


async def test_scenario_d_sheds_interactive_overflow_and_parks_reserved(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    clock = RealClock()
    async with running_simulator(SIM, clock=clock) as sim, saturation_exporter(POOL) as exporter:
        exporter.effective = 1.0  # saturated; the decode stage alone would say otherwise
        prom = prometheus_factory([exporter.target])
        env = Env(sim, prom, trace=trace_of(sim), clock=clock)
        config = settings(env.sim_url, prom.url, "tier-priority-admission", GATE)
        broker = CountingBroker()
        proc, hub, _ = processor(env, config, broker)
        (refresher,) = hub.refreshers.values()
        budgets = Budgets()
        budgets.watch(refresher)
        await proc.start()
        try:
            await budgets.wait_readable(refresher)
            assert (await refresher.latest()).value == 0.0  # v = 1 - S, effective stage
            await publish(broker, clock, "premium", 4)  # interactive: 2 reserved, 2 overflow
            await publish(broker, clock, "batch", 2)  # batch: 1 reserved, 1 overflow
            shed = await collect(broker, 2, within=30)
            assert env.trace.events == []  # nothing dispatched while saturated
            assert broker.retries >= 1  # the batch overflow went back to the broker
            exporter.effective = 0.0
            rest = await collect(broker, 4, within=60)
        finally:
            await proc.stop()
            await hub.aclose()
    assert {r.id.split("-")[0] for r in shed} == {"premium"}
    for record in shed:
        assert record.error_code == ErrorCode.GATE_DROPPED
        assert json.loads(record.payload) == {"error": "Too Many Requests", "code": 429}
    assert all(r.status_code == 200 for r in rest)
    assert sorted(r.id.split("-")[0] for r in rest) == ["batch", "batch", "premium", "premium"]
