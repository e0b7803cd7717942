"""The guide's Redis saturation overlay (values-redis-saturation-prometheus.yaml) loads and runs
unchanged but for its placeholders: Redis, the simulator as the gateway, and a Prometheus that
labels the simulator's series with ``inference_pool`` as the guide's PodMonitor does."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from saturation_rig import POOL, RESULTS, Budgets, sim_and_prometheus

from sluiceway.config.processor_settings import load_processor_settings
from sluiceway.gates.context import REDIS_GATES_SERVICE, SIGNALS_SERVICE
from sluiceway.localservices import PrometheusServer, RedisServer
from sluiceway.processor.build import open_backend, runtime_settings
from sluiceway.processor.service import Processor
from sluiceway.signals.refresher import SignalHub
from sluiceway.wire import decode_result

pytestmark = [pytest.mark.prometheus, pytest.mark.redis, pytest.mark.serial]

FIXTURE = (
    Path(__file__).parents[2] / "fixtures" / "guide" / "values-redis-saturation-prometheus.yaml"
)


def _render(text: str, *, redis: RedisServer, sim_url: str, prom_url: str) -> str:
    host_port = f"{redis.host}:{redis.port}"
    for placeholder, value in {
        "PROM_URL": prom_url,
        "POOL_NAME": POOL,
        "SAT_CAP": "4",
        "redis://redis:6379": redis.url,
        "redis:6379": host_port,
        "http://llm-d-router-epp:80": sim_url,
    }.items():
        text = text.replace(placeholder, value)
    return text


async def test_overlay_runs_with_its_saturation_gate_reading_prometheus(
    prometheus_factory: Callable[..., PrometheusServer],
    redis_server: RedisServer,
    tmp_path: Path,
) -> None:
    async with sim_and_prometheus(prometheus_factory) as env:
        values = tmp_path / "values.yaml"
        values.write_text(
            _render(
                FIXTURE.read_text(), redis=redis_server, sim_url=env.sim_url, prom_url=env.prom.url
            )
        )
        loaded = load_processor_settings(
            config_file=values, overrides={"prometheus_cache_ttl": 0.0}, env={}
        )
        config = loaded.value
        backend = await open_backend(config, time_scale=1.0)
        registry = CollectorRegistry()
        runtime = runtime_settings(config)
        assert runtime.prometheus.cache_ttl == 0 and runtime.prometheus.url == env.prom.url
        hub = SignalHub(env.clock, runtime.prometheus)
        proc = Processor(
            runtime,
            backend.broker,
            clock=env.clock,
            registry=registry,
            quota_store=backend.quota_stores,
            services={REDIS_GATES_SERVICE: backend.redis_gates, SIGNALS_SERVICE: hub},
        )
        (refresher,) = hub.refreshers.values()
        budgets = Budgets()
        budgets.watch(refresher)
        try:
            await proc.start()
            await budgets.wait_readable(refresher)
            now = env.clock.now()
            for team in ("premium", "batch"):
                entries = [_entry(team, i, now) for i in range(4)]
                await backend.broker.enqueue(f"team-{team}", entries)
            results = []
            end = time.monotonic() + 60
            while len(results) < 8:
                raw = await backend.broker.pop_result(RESULTS, max(0.0, end - time.monotonic()))
                assert raw is not None, f"only {len(results)} results"
                results.append(decode_result(raw))
            labels = {"queue_id": "", "queue_name": "", "pool_name": "teams", "inference_pool": ""}
            available = registry.get_sample_value(
                "llm_d_async_async_gate_metric_source_available", labels
            )
        finally:
            await proc.stop()
            await hub.aclose()
            await backend.aclose()
    assert all(r.status_code == 200 for r in results)
    assert available == 1.0  # the query's inference_pool filter matched the scraped series


def _entry(team: str, index: int, now: float) -> tuple[str, float]:
    data = {
        "id": f"{team}-{index}",
        "created": int(now),
        "deadline": now + 300,
        "payload": {"model": "sim-model", "prompt": "hello", "max_tokens": 8},
        "metadata": {"team": team},
    }
    return json.dumps({"internal": {}, "request_kind": "plain", "data": data}), now + 300
