"""The coordinator's operator signals over real HTTP (the simulator behind it, the openai
client in front): access-log lines by mode, HTTP metrics by route template, the ``forward``
span's context sent upstream."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from coordinator_rig import guide_params
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.coordinator.forwarding import HttpForwarder
from sluiceway.coordinator.observed import observed_app, show_metrics_on
from sluiceway.coordinator.server import build_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.observability.access_log import ACCESS_LOGGER
from sluiceway.observability.tracing import Tracing
from sluiceway.serving import start_server
from sluiceway.sim import SimConfig, SimPool, running_simulator

CALLER_TRACE = "5b8efff798038103d269b633813fc60c"
CALLER = f"00-{CALLER_TRACE}-eee19b7ec3c1b174-01"
SIM = SimConfig(
    time_to_first_token=0.005, inter_token_latency=0.001, label_headers=("traceparent",)
)
TENANT = {"x-llm-d-tenant": "premium"}


@contextlib.asynccontextmanager
async def observed_front(
    exporter: InMemorySpanExporter,
) -> AsyncIterator[tuple[str, SimPool]]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with running_simulator(SIM, clock=RealClock()) as sim:
        forwarder = HttpForwarder(sim.urls[0], timeout=30)
        params = guide_params()
        front = build_coordinator(
            params,
            broker=MemoryBroker(),
            quota_store=MemoryQuotaStore(),
            forwarder=forwarder,
            clock=RealClock(),
            upstream=sim.urls[0],
        )
        app = observed_app(front, params, access_sample=1.0, tracing=Tracing(provider))
        server = await start_server(app, name="coordinator")
        try:
            yield server.url, sim
        finally:
            await server.stop()
            await forwarder.aclose()


async def _lines(caplog: pytest.LogCaptureFixture, n: int) -> list[logging.LogRecord]:
    """The ``n`` access-log lines once written: a line goes out when its handler returns,
    which may be after the client has read the last byte (bounded in wall time)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + 10.0
    while len(found := [r for r in caplog.records if r.name == ACCESS_LOGGER]) < n:
        assert loop.time() < end, f"{len(found)} of {n} access lines"
        await asyncio.sleep(0.002)
    assert len(found) == n
    return found


def _value(page: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(page):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return float(found.value)
    return 0.0


async def test_lines_metrics_and_trace_by_mode(caplog: pytest.LogCaptureFixture) -> None:
    exporter = InMemorySpanExporter()
    async with observed_front(exporter) as (url, sim):
        passthrough = {**TENANT, "x-llm-d-async-mode": "passthrough", "traceparent": CALLER}
        enqueue = {**TENANT, "x-llm-d-async-mode": "enqueue"}
        with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
            async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0) as c:
                await c.completions.create(
                    model="sim-model", prompt="hi", max_tokens=2, extra_headers=passthrough
                )
            async with aiohttp.ClientSession() as s:
                body = {"model": "sim-model", "prompt": "hi", "max_tokens": 2}
                async with s.post(url + "/v1/completions", json=body, headers=enqueue) as r:
                    assert r.status == 202
                    queued = (await r.json())["id"]
                async with s.get(f"{url}/v1/requests/{queued}", headers=TENANT) as r:
                    assert r.status in (200, 202)
                written = await _lines(caplog, 3)
                async with s.get(url + "/metrics") as r:
                    page = await r.text()
        lines = [vars(r) for r in written]
        assert [(f["mode"], f["route"], f["status"]) for f in lines] == [
            ("passthrough", "/v1/completions", 200),
            ("enqueue", "/v1/completions", 202),
            (None, "/v1/requests/{id}", lines[2]["status"]),
        ]
        through = lines[0]
        assert through["component"] == "coordinator" and through["tenant"] == "premium"
        assert through["objective"] and through["endpoint"] == sim.urls[0]
        assert through["trace_id"] == CALLER_TRACE
        assert lines[2]["path"] == f"/v1/requests/{queued}"
        total = "sluiceway_coordinator_http_requests_total"
        assert _value(page, total, route="/v1/completions", status="202") == 1
        assert _value(page, total, route="/v1/requests/{id}") == 1
        assert queued not in page  # ids never become labels
        assert _value(page, total, route="/v1/completions", band=through["objective"]) == 1
        spans: dict[str, Any] = {}
        for span in exporter.get_finished_spans():
            spans.setdefault(span.name, []).append(span)
        (forward,) = spans["forward"]  # passthrough only: a queued request's lookups are not
        sent = sim.engines[0].max_running_by_label("traceparent")
        assert list(sent) == [f"00-{CALLER_TRACE}-{forward.context.span_id:016x}-01"]
        server = next(s for s in spans["POST /v1/completions"] if s.context == forward.parent)
        assert (server.attributes or {})["sluiceway.mode"] == "passthrough"


def test_a_metric_name_in_both_registries_fails_the_mount() -> None:
    front = build_coordinator(
        guide_params(),
        broker=MemoryBroker(),
        quota_store=MemoryQuotaStore(),
        forwarder=HttpForwarder("http://127.0.0.1:9", timeout=1),
        clock=RealClock(),
    )
    router_registry = CollectorRegistry()
    Gauge("sluiceway_coordinator_held_connections", "a clash", registry=router_registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        show_metrics_on(router_registry, front)
    apart = CollectorRegistry()
    show_metrics_on(apart, front)
    assert "sluiceway_coordinator_held_connections" in generate_latest(apart).decode()
