"""Spans from request records (the SDK's in-memory exporter), and which OTEL_* settings turn
tracing on."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import propagate
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.tracing import (
    Tracing,
    exporter_choice,
    inject_trace,
    tracing_from_environment,
)

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = {"traceparent": f"00-{CALLER_TRACE}-00f067aa0ba902b7-01"}


@pytest.fixture
def spans() -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider), exporter


def _served(tracing: Tracing) -> tuple[ServedRequest, dict[str, str]]:
    record = ServedRequest("router", "POST", "/v1/completions", "/v1/completions", 10.0, 10**18)
    tracing.begin(record, CALLER)
    record.queued_at, record.dispatched_at, record.admitted_at = 10.001, 10.004, 10.005
    record.upstream_at, record.endpoint = 10.006, "http://10.0.0.1:8000"
    upstream: dict[str, str] = {"traceparent": "from the caller"}
    inject_trace(record, upstream, "upstream")
    record.status, record.priority, record.tenant, record.ended_at = 200, 7, "a", 10.5
    record.completion_tokens = 16
    tracing.end(record)
    return record, upstream


def test_server_span_children_and_the_context_sent_upstream(
    spans: tuple[Tracing, InMemorySpanExporter],
) -> None:
    tracing, exporter = spans
    record, upstream = _served(tracing)
    found = {span.name: span for span in exporter.get_finished_spans()}
    assert set(found) == {"POST /v1/completions", "flow_control.queue", "dispatch", "upstream"}
    server = found["POST /v1/completions"]
    assert server.kind is SpanKind.SERVER
    assert format(server.context.trace_id, "032x") == CALLER_TRACE  # the caller's trace
    assert server.parent is not None and server.parent.span_id == 0x00F067AA0BA902B7
    for name in ("flow_control.queue", "dispatch", "upstream"):
        assert found[name].parent is not None
        assert found[name].parent.span_id == server.context.span_id
    assert found["upstream"].kind is SpanKind.CLIENT
    client = found["upstream"].context
    assert upstream["traceparent"] == f"00-{CALLER_TRACE}-{client.span_id:016x}-01"
    queue = found["flow_control.queue"]
    assert (queue.start_time, queue.end_time) == (10**18 + 1_000_000, 10**18 + 4_000_000)
    assert (server.start_time, server.end_time) == (10**18, 10**18 + 500_000_000)
    attrs = server.attributes or {}
    assert attrs["http.response.status_code"] == 200 and attrs["sluiceway.priority"] == 7
    assert attrs["http.route"] == "/v1/completions" and attrs["gen_ai.usage.output_tokens"] == 16
    assert "sluiceway.mode" not in attrs  # empty facts are left out
    assert (found["dispatch"].attributes or {})["server.address"] == "http://10.0.0.1:8000"
    assert tracing.trace_id(record) == CALLER_TRACE


def test_a_server_error_marks_the_span(spans: tuple[Tracing, InMemorySpanExporter]) -> None:
    tracing, exporter = spans
    record = ServedRequest("router", "POST", "/v1/completions", "/v1/completions", 1.0, 10**18)
    tracing.begin(record, {})
    record.status, record.ended_at = 502, 1.2
    tracing.end(record)
    (server,) = exporter.get_finished_spans()
    assert server.status.status_code is StatusCode.ERROR
    assert server.parent is None  # no caller context: a new trace


def test_untraced_records_are_left_alone() -> None:
    record = ServedRequest("router", "POST", "/v1/completions", "/v1/completions", 1.0, 0)
    headers = {"traceparent": "kept"}
    inject_trace(record, headers, "upstream")
    assert headers == {"traceparent": "kept"}


@pytest.mark.parametrize(
    ("env", "choice"),
    [
        ({}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"}, None),
        ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
    ],
)
def test_exporter_choice(env: dict[str, str], choice: str | None) -> None:
    assert exporter_choice(env) == (choice, None)


def test_unsupported_exporters_say_why() -> None:
    grpc = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert exporter_choice(grpc)[0] is None
    assert "http/protobuf" in str(exporter_choice(grpc)[1])
    assert "zipkin" in str(exporter_choice({"OTEL_TRACES_EXPORTER": "zipkin"})[1])


def test_from_environment_is_none_without_an_exporter_and_named_with_one() -> None:
    assert tracing_from_environment("sluiceway-router", {}) is None
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    tracing = tracing_from_environment("sluiceway-router", env)
    assert tracing is not None
    try:
        assert tracing.provider.resource.attributes["service.name"] == "sluiceway-router"
    finally:
        tracing.shutdown()


class _Marker(TextMapPropagator):
    """A second propagator: the configured set is then not W3C alone."""

    def extract(self, carrier: Any, context: Any = None, getter: Any = None) -> Any:
        return context

    def inject(self, carrier: Any, context: Any = None, setter: Any = None) -> None:
        carrier["x-marker"] = "1"

    @property
    def fields(self) -> set[str]:
        return {"x-marker"}


def test_other_propagators_write_their_headers_beside_traceparent() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    before = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator([TraceContextTextMapPropagator(), _Marker()]))
    try:
        tracing = Tracing(provider)
        _, upstream = _served(tracing)
    finally:
        propagate.set_global_textmap(before)
    client = next(s for s in exporter.get_finished_spans() if s.name == "upstream").context
    assert upstream == {
        "traceparent": f"00-{CALLER_TRACE}-{client.span_id:016x}-01",
        "x-marker": "1",
    }
