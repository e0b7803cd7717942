"""Scenario C: wait-on-refuse over prometheus-query parks the pool while the simulator is
saturated (SAT_CAP 4, 16 workers), without broker churn, and drains the highest lanes first;
two processors on the same queues hold what one does."""

from __future__ import annotations

from collections.abc import Callable
from statistics import mean

import pytest
import redis.asyncio as aioredis
from saturation_rig import (
    SERVICE_TIME,
    WORKERS,
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
)

from sluiceway.ledger.membership import ReplicaMembership
from sluiceway.localservices import PrometheusServer, RedisServer

pytestmark = [pytest.mark.prometheus, pytest.mark.redis, pytest.mark.serial, pytest.mark.slow]

SAT_CAP = 4


async def test_scenario_c_parks_near_sat_cap(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    async with sim_and_prometheus(prometheus_factory) as env:
        gate = wait_on_refuse(
            "prometheus-query", {"query": sat_cap_query(SAT_CAP), "fallback": "1"}
        )
        config = settings(env.sim_url, env.prom.url, "wait-on-refuse", gate)
        broker = CountingBroker()
        proc, hub, registry = processor(env, config, broker)
        budgets = Budgets()
        (refresher,) = hub.refreshers.values()
        budgets.watch(refresher)
        await proc.start()
        await budgets.wait_readable(refresher)
        try:
            await publish(broker, env.clock, "premium", 20)
            await publish(broker, env.clock, "batch", 20)
            results = await collect(broker, 40, within=120)
        finally:
            await proc.stop()
            await hub.aclose()
        assert all(r.status_code == 200 for r in results)
        first_zero = budgets.first(0.0)
        assert first_zero is not None, budgets.values  # the budget reached exactly 0
        assert (
            sample_value(
                registry,
                "gate_metric_source_available",
                queue_id="",
                queue_name="",
                pool_name="teams",
                inference_pool="",
            )
            == 1.0
        )
    starts = env.trace.starts()
    drained = starts[-1][0]  # the backlog is empty once the last request started
    window = (first_zero + SERVICE_TIME, drained)
    assert window[1] > window[0]
    assert env.trace.average(*window) <= SAT_CAP + 1
    assert env.trace.peak(*window) <= WORKERS - 1
    assert broker.releases == 0 and broker.retries == 0  # parked workers kept their messages
    order = {
        lane: mean(i for i, (_, seen) in enumerate(starts) if seen == lane) for _, lane in starts
    }
    assert order["reserved-interactive"] < order["overflow-batch"]
    assert order["overflow-interactive"] < order["overflow-batch"]


async def test_sat_cap_above_workers_never_closes(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    async with sim_and_prometheus(prometheus_factory) as env:
        query = sat_cap_query(WORKERS + 1)
        gate = wait_on_refuse("prometheus-query", {"query": query, "fallback": "1"})
        config = settings(env.sim_url, env.prom.url, "wait-on-refuse", gate)
        broker = CountingBroker()
        proc, hub, _ = processor(env, config, broker)
        budgets = Budgets()
        (refresher,) = hub.refreshers.values()
        budgets.watch(refresher)
        await proc.start()
        await budgets.wait_readable(refresher)
        try:
            await publish(broker, env.clock, "batch", 40)
            await collect(broker, 40, within=120)
        finally:
            await proc.stop()
            await hub.aclose()
    seen = [v for _, v in budgets.values if v is not None]
    assert seen and min(seen) > 0


async def test_scenario_c_with_two_processors_holds_what_one_does(
    prometheus_factory: Callable[..., PrometheusServer], redis_server: RedisServer
) -> None:
    async with sim_and_prometheus(prometheus_factory) as env:
        gate = wait_on_refuse(
            "prometheus-query", {"query": sat_cap_query(SAT_CAP), "fallback": "1"}
        )
        config = settings(env.sim_url, env.prom.url, "wait-on-refuse", gate)
        broker = CountingBroker()
        redis = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
        procs = []
        for n in range(2):
            member = ReplicaMembership(redis, env.clock, member=f"c-{n}")
            procs.append(processor(env, config, broker, member))
        budgets = Budgets()
        for proc, hub, _ in procs:
            (refresher,) = hub.refreshers.values()
            budgets.watch(refresher)
            await proc.start()
        try:
            for proc, _, _ in procs:
                assert proc.membership is not None
                await proc.membership.sync_once()  # the first one started alone
            assert {p.rt.shares("teams").live for p, _, _ in procs} == {2}
            await budgets.wait_readable(refresher)
            await publish(broker, env.clock, "premium", 20)
            await publish(broker, env.clock, "batch", 20)
            results = await collect(broker, 40, within=120)
        finally:
            for proc, hub, _ in procs:
                await proc.stop()
                await hub.aclose()
            await redis.aclose()
        assert all(r.status_code == 200 for r in results)
        first_zero = budgets.first(0.0)
        assert first_zero is not None, budgets.values
    starts = env.trace.starts()
    window = (first_zero + SERVICE_TIME, starts[-1][0])
    assert window[1] > window[0]
    # the same bounds as one processor's: the two split the in-flight target between them
    assert env.trace.average(*window) <= SAT_CAP + 1
    assert env.trace.peak(*window) <= WORKERS - 1
