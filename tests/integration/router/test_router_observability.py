"""The router's operator signals over real HTTP, with the simulator and the openai client:
one access-log line per request, HTTP metrics by route template, spans with the context
carried upstream; with the coordinator mounted, its metrics on the router's page and one trace
across both."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from router_harness import (
    FAIRNESS,
    GUIDE_OBJECTIVES,
    OBJECTIVE,
    Rig,
    coordinator_params,
    fc_config,
    running_router,
    sample,
    scrape,
    until,
)

from loopback import serving
from sluiceway.broker.memory import MemoryBroker
from sluiceway.coordinator.server import mount_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.observability.access_log import ACCESS_LOGGER
from sluiceway.observability.tracing import Tracing
from sluiceway.router.observed_app import ObservedRouterApp
from sluiceway.sim import SimConfig, running_simulator

SIM = SimConfig(
    time_to_first_token=0.01,
    inter_token_latency=0.002,
    label_headers=("traceparent", OBJECTIVE, FAIRNESS),
)
CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER = f"00-{CALLER_TRACE}-b7ad6b7169203331-01"
TOTAL = "sluiceway_router_http_requests_total"


def written(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == ACCESS_LOGGER]


async def access_lines(caplog: pytest.LogCaptureFixture, n: int) -> list[logging.LogRecord]:
    """The ``n`` access-log lines, once written: a line goes out when its handler returns,
    which may be after the client has read the last byte."""
    await until(lambda: len(written(caplog)) >= n, what=f"{n} access lines")
    found = written(caplog)
    assert len(found) == n
    return found


@contextlib.asynccontextmanager
async def traced_router(**kw: Any) -> AsyncIterator[tuple[Rig, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with running_router(
        fc_config(), sim=SIM, settings={"access_log_sample": 1.0}, **kw
    ) as rig:
        assert isinstance(rig.app, ObservedRouterApp)
        rig.app.observer.tracing = Tracing(provider)
        yield rig, exporter


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


async def test_one_line_per_request_with_its_facts(caplog: pytest.LogCaptureFixture) -> None:
    async with (
        running_router(
            fc_config(),
            sim=SIM,
            objectives={"gold": 40},
            settings={"access_log_sample": 1.0},
        ) as rig,
        openai.AsyncOpenAI(base_url=rig.base, api_key="x", max_retries=0) as client,
    ):
        who = {OBJECTIVE: "gold", FAIRNESS: "team-a"}
        with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
            stream = await client.chat.completions.with_raw_response.create(
                model="sim-model",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=6,
                stream=True,
                extra_headers=who,
            )
            told = stream.headers.get("x-request-id")
            chunks = [c async for c in stream.parse()]
            await client.completions.create(model="sim-model", prompt="hello", max_tokens=3)
            with pytest.raises(openai.NotFoundError):
                await client.completions.create(model="no-such-model", prompt="x", max_tokens=1)
            streamed, plain, missing = await access_lines(caplog, 3)
        assert chunks
        assert streamed.getMessage() == "POST /v1/chat/completions 200"
        facts = vars(streamed)
        assert (facts["tenant"], facts["objective"], facts["priority"]) == ("team-a", "gold", 40)
        assert facts["endpoint"] == rig.sim.urls[0] and facts["model"] == "sim-model"
        assert facts["stream"] is True and facts["completion_tokens"] == 6
        assert facts["queue_ms"] is not None and facts["queue_ms"] >= 0
        assert 0 < facts["ttft_ms"] <= facts["duration_ms"]
        if told is not None:  # the id the client was told is the one logged
            assert facts["request_id"] == told
        assert facts["request_id"]
        assert (vars(plain)["priority"], vars(plain)["tenant"]) == (0, "default-flow")
        assert vars(plain)["stream"] is False and vars(plain)["completion_tokens"] == 3
        assert vars(missing)["status"] == 404 and vars(missing)["queue_ms"] is None


async def test_metrics_by_route_template_status_and_band() -> None:
    async with (
        running_router(fc_config(), sim=SIM, objectives={"gold": 40}) as rig,
        aiohttp.ClientSession() as s,
    ):
        payload = {"model": "sim-model", "prompt": "hi", "max_tokens": 2, "stream": True}
        for _ in range(2):
            async with s.post(
                rig.url + "/v1/completions", json=payload, headers={OBJECTIVE: "gold"}
            ) as r:
                assert r.status == 200
                await r.read()
        async with s.post(rig.url + "/v1/requests/secret-id-1", json=payload) as r:
            assert r.status == 404
        page = await scrape(rig.url)
        ok = {"route": "/v1/completions", "method": "POST", "status": "200", "band": "40"}
        assert sample(page, TOTAL, **ok) == 2
        assert sample(page, TOTAL, route="unmatched", status="404") == 1
        assert "secret-id-1" not in page  # raw paths never become labels
        ttfb = "sluiceway_router_http_time_to_first_byte_seconds_count"
        assert sample(page, ttfb, route="/v1/completions", band="40") == 2
        duration = "sluiceway_router_http_request_duration_seconds_count"
        assert sample(page, duration, route="/v1/completions", status_class="2xx") == 2
        # the scrape before this one was counted too, as a probe
        assert sample(await scrape(rig.url), TOTAL, route="/metrics", status="200") >= 1


async def test_spans_and_the_context_sent_upstream() -> None:
    async with traced_router() as (rig, exporter), aiohttp.ClientSession() as s:
        payload = {"model": "sim-model", "prompt": "hi", "max_tokens": 3, "stream": True}
        headers = {"traceparent": CALLER}
        async with s.post(rig.url + "/v1/completions", json=payload, headers=headers) as r:
            assert r.status == 200
            await r.read()
        async with s.get(rig.url + "/healthz") as r:
            assert r.status == 200
        spans = by_name(exporter.get_finished_spans())
        assert set(spans) == {"POST /v1/completions", "flow_control.queue", "dispatch", "upstream"}
        (server,) = spans["POST /v1/completions"]
        assert format(server.context.trace_id, "032x") == CALLER_TRACE
        (upstream,) = spans["upstream"]
        assert upstream.parent is not None and upstream.parent.span_id == server.context.span_id
        sent = rig.sim.engines[0].max_running_by_label("traceparent")
        assert list(sent) == [f"00-{CALLER_TRACE}-{upstream.context.span_id:016x}-01"]
        assert (server.attributes or {})["http.response.status_code"] == 200


async def test_mounted_coordinator_metrics_and_one_trace_across_both(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with traced_router(objectives=GUIDE_OBJECTIVES) as (rig, exporter):
        front = mount_coordinator(
            rig.app,
            coordinator_params(),
            broker=MemoryBroker(),
            quota_store=MemoryQuotaStore(),
            clock=rig.clock,
        )
        mode = {"x-llm-d-async-mode": "passthrough", "traceparent": CALLER}
        async with openai.AsyncOpenAI(base_url=rig.base, api_key="x", max_retries=0) as client:
            with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
                await client.completions.create(
                    model="sim-model", prompt="hi", max_tokens=2, extra_headers=mode
                )
                lines = await access_lines(caplog, 2)
        page = await scrape(rig.url)  # no mode header: the router's own page
        assert "sluiceway_coordinator_held_connections" in page
        assert sample(page, "sluiceway_coordinator_requests_total", mode="passthrough") == 1
        coordinator_total = "sluiceway_coordinator_http_requests_total"
        assert sample(page, coordinator_total, route="/v1/completions", status="200") == 1
        assert sample(page, TOTAL, route="/v1/completions", status="200") == 1
        assert front.metrics.registry is not rig.gateway.metrics.registry
        router_line, coordinator_line = sorted(lines, key=lambda r: vars(r)["component"])[::-1]
        assert vars(coordinator_line)["component"] == "coordinator"
        assert vars(coordinator_line)["mode"] == "passthrough"
        stamped = vars(router_line)["objective"]
        assert stamped in GUIDE_OBJECTIVES and vars(coordinator_line)["objective"] == stamped
        assert vars(router_line)["priority"] == GUIDE_OBJECTIVES[stamped]
        assert vars(router_line)["tenant"] == vars(coordinator_line)["tenant"]
        spans = by_name(exporter.get_finished_spans())
        (outer, inner) = sorted(
            spans["POST /v1/completions"], key=lambda span: span.start_time or 0
        )
        (forward,) = spans["forward"]
        assert {format(span.context.trace_id, "032x") for span in (outer, inner, forward)} == {
            CALLER_TRACE
        }
        assert forward.parent is not None and forward.parent.span_id == outer.context.span_id
        assert inner.parent is not None and inner.parent.span_id == forward.context.span_id


async def test_cli_json_access_lines_and_otlp_export_from_the_environment() -> None:
    exported: list[bytes] = []

    async def collect(request: web.Request) -> web.Response:
        exported.append(await request.read())
        return web.Response(status=200, content_type="application/x-protobuf")

    sink = web.Application()
    sink.router.add_post("/v1/traces", collect)
    env = dict(os.environ, OTEL_SERVICE_NAME="router-under-test")
    async with serving(sink) as sink_url, running_simulator(SIM) as sim:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink_url
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "sluiceway", "router", "--endpoints", sim.urls[0], "--port", "0"),
            *("--log-format", "json", "--log-level", "warning", "--access-log-sample", "1"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        try:
            assert proc.stdout is not None
            url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().split()[2]
            async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="x", max_retries=0) as c:
                await c.completions.create(
                    model="sim-model", prompt="hi", max_tokens=2, extra_headers={FAIRNESS: "t1"}
                )
        finally:
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 30)
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
    assert code == 0, err
    lines = [json.loads(line) for line in err.splitlines() if '"sluiceway.access"' in line]
    (line,) = lines
    assert line["message"] == "POST /v1/completions 200" and line["tenant"] == "t1"
    assert line["completion_tokens"] == 2 and len(line["trace_id"]) == 32
    names: set[str] = set()
    for body in exported:  # flushed at exit at the latest
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            assert service["service.name"] == "router-under-test"
            names.update(s.name for scope in resource.scope_spans for s in scope.spans)
    # without --config flow control is off: admission (legacy shedding) is the queue step
    assert names == {"POST /v1/completions", "flow_control.queue", "dispatch", "upstream"}
