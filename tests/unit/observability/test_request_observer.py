"""One mechanism, three sinks: a component watches its send with the observer and hands it the
record when the handler returns, however it ends; metrics, access log and spans follow."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from sluiceway.observability.access_log import ACCESS_LOGGER, AccessLog
from sluiceway.observability.request_observer import RequestObserver, Send
from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.tracing import Tracing

TOTAL = "sluiceway_router_http_requests_total"


async def serve(
    obs: RequestObserver,
    record: ServedRequest,
    send: Send,
    handle: Callable[[Send], Awaitable[None]],
) -> None:
    """What the router and the coordinator do around each handler."""
    try:
        await handle(obs.watch(record, send))
    finally:
        obs.end(record)


def observer(tracing: Tracing | None = None) -> tuple[RequestObserver, CollectorRegistry]:
    registry = CollectorRegistry()
    return RequestObserver("router", registry, AccessLog(1.0), tracing), registry


async def test_the_record_is_current_and_the_sinks_are_fed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def handle(out: Send) -> None:
        head = [(b"content-type", b"text/event-stream"), (b"x-request-id", b"told")]
        await out({"type": "http.response.start", "status": 200, "headers": head})
        await out({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await out({"type": "http.response.body", "body": b""})

    obs, registry = observer()
    headers = [(b"x-request-id", b"asked")]
    record = obs.begin("POST", "/v1/completions", "/v1/completions", headers)
    assert record.request_id == "asked"
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        await serve(obs, record, send, handle)
    assert len(sent) == 3  # everything went through
    assert (record.status, record.stream, record.request_id) == (200, True, "told")
    assert record.first_byte_at and record.ended_at >= record.first_byte_at
    labels = {"route": "/v1/completions", "method": "POST", "status": "200", "band": ""}
    assert registry.get_sample_value(TOTAL, labels) == 1
    (line,) = caplog.records
    assert line.getMessage() == "POST /v1/completions 200"


async def test_a_handler_that_fails_is_still_recorded_as_499_without_a_head() -> None:
    async def send(message: MutableMapping[str, Any]) -> None:
        raise AssertionError("nothing is sent")

    async def handle(out: Send) -> None:
        raise ConnectionResetError

    obs, registry = observer()
    record = obs.begin("POST", "/v1/completions", "/v1/completions", [])
    with pytest.raises(ConnectionResetError):
        await serve(obs, record, send, handle)
    labels = {"route": "/v1/completions", "method": "POST", "status": "499", "band": ""}
    assert registry.get_sample_value(TOTAL, labels) == 1


async def test_probes_are_counted_not_traced(caplog: pytest.LogCaptureFixture) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    obs, registry = observer(Tracing(provider))

    async def send(message: MutableMapping[str, Any]) -> None:
        return None

    async def handle(out: Send) -> None:
        await out({"type": "http.response.start", "status": 200, "headers": []})
        await out({"type": "http.response.body", "body": b"ok"})

    probe = obs.begin("GET", "/metrics", "/metrics", [], probe=True)
    traced = obs.begin("POST", "/v1/completions", "/v1/completions", [])
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        await serve(obs, probe, send, handle)
        await serve(obs, traced, send, handle)
    assert [span.name for span in exporter.get_finished_spans()] == ["POST /v1/completions"]
    assert [r.getMessage() for r in caplog.records] == ["POST /v1/completions 200"]
    probes = {"route": "/metrics", "method": "GET", "status": "200", "band": ""}
    assert registry.get_sample_value(TOTAL, probes) == 1
    assert getattr(caplog.records[0], "trace_id", None) is not None
