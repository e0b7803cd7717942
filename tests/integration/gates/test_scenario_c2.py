"""Scenario C2: a blind gate (Prometheus unreachable, or a query without series) applies its
configured fallback and says so; without a fallback it stays closed and dispatches nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from saturation_rig import (
    Budgets,
    CountingBroker,
    collect,
    processor,
    publish,
    sample_value,
    sat_cap_query,
    settings,
    sim_and_prometheus,
    wait_on_refuse,
    wait_until,
)

from sluiceway.localservices import PrometheusServer
from sluiceway.ports import free_port

pytestmark = [pytest.mark.prometheus, pytest.mark.serial]

LABELS = {"queue_id": "", "queue_name": "", "pool_name": "teams", "inference_pool": ""}


async def test_unreachable_prometheus_uses_fallback_one_and_exports_blindness(
    prometheus_factory: Callable[..., PrometheusServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sluiceway.gates.metric")
    async with sim_and_prometheus(prometheus_factory) as env:
        gate = wait_on_refuse("prometheus-query", {"query": sat_cap_query(4), "fallback": "1"})
        unreachable = f"http://127.0.0.1:{free_port()}"
        config = settings(env.sim_url, unreachable, "wait-on-refuse", gate)
        broker = CountingBroker()
        proc, hub, registry = processor(env, config, broker)
        await proc.start()
        try:
            await publish(broker, env.clock, "batch", 20)
            results = await collect(broker, 20, within=60)
        finally:
            await proc.stop()
            await hub.aclose()
    assert all(r.status_code == 200 for r in results)
    assert sample_value(registry, "gate_metric_source_available", **LABELS) == 0.0
    assert sample_value(registry, "gate_metric_value", **LABELS) is None  # never read a value
    blind = [r for r in caplog.records if "signal blind" in r.getMessage()]
    assert len(blind) == 1 and "using fallback value (budget 1.0)" in blind[0].getMessage()


async def test_no_series_and_no_fallback_stays_closed(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    async with sim_and_prometheus(prometheus_factory) as env:
        query = 'clamp(1 - sum(vllm:num_requests_running{inference_pool="no-such-pool"})/4, 0, 1)'
        gate = wait_on_refuse("prometheus-query", {"query": query})
        config = settings(env.sim_url, env.prom.url, "wait-on-refuse", gate)
        broker = CountingBroker()
        proc, hub, registry = processor(env, config, broker)
        (refresher,) = hub.refreshers.values()
        budgets = Budgets()
        budgets.watch(refresher)
        await proc.start()
        try:
            await publish(broker, env.clock, "premium", 4)
            parked = {"queue_id": "", "queue_name": "", "pool_name": "teams"}

            def all_parked() -> bool:
                reasons = ("gate_closed", "quota_exhausted")
                held = [
                    sample_value(registry, "gate_decisions_total", reason=r, **parked) or 0
                    for r in reasons
                ]
                return sum(held) == 4

            await wait_until(all_parked)
            for _ in range(3):  # three answers from the real Prometheus, each without series
                assert not (await refresher.refresh()).available
            assert await broker.result_count("results-list") == 0
        finally:
            await proc.stop()
            await hub.aclose()
        backlog = sum([await broker.backlog(f"team-{t}") for t in ("premium",)])
    assert env.trace.events == []  # nothing reached the simulator
    assert backlog == 4  # the parked requests went back, none lost
    assert sample_value(registry, "gate_metric_source_available", **LABELS) == 0.0
    assert all(v is None for _, v in budgets.values)
