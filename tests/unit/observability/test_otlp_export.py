"""The lean OTLP encoding: what a collector decodes (opentelemetry-proto) is what the SDK's own
encoder makes of the same spans; batches are posted, flushed on shutdown."""

from __future__ import annotations

import http.server
import itertools
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest
from opentelemetry.exporter.http.transport._requests import RequestsHTTPTransport
from opentelemetry.exporter.http.transport._urllib3 import Urllib3HTTPTransport
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as sdk_encode
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from sluiceway.observability.otlp_export import (
    OtlpRequests,
    encode_requests,
    envelope,
    lean_transport,
)
from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.tracing import Tracing, inject_trace

CALLER = {
    "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "tracestate": "vendor=abc",
}
# Every kind of value an attribute may hold, in the resource (encoded once).
RESOURCE = Resource(
    {"service.name": "r", "n": -3, "big": 2**40, "ok": True, "f": 1.5, "tags": ("a", "b")}
)


class Counting(IdGenerator):
    """Ids 1, 2, 3 ... so that two encodings of one request can be compared."""

    def __init__(self) -> None:
        self._next: Iterator[int] = itertools.count(1)

    def generate_span_id(self) -> int:
        return next(self._next)

    def generate_trace_id(self) -> int:
        return 0xABC << 64 | next(self._next)


def _served(tracing: Tracing, headers: dict[str, str], status: int = 200) -> ServedRequest:
    record = ServedRequest("router", "POST", "/v1/completions", "/v1/completions", 10.0, 10**18)
    tracing.begin(record, headers)
    record.queued_at, record.dispatched_at, record.admitted_at = 10.001, 10.004, 10.005
    record.upstream_at, record.endpoint = 10.006, "http://10.0.0.1:8000"
    inject_trace(record, {}, "upstream")
    record.status, record.priority, record.tenant, record.ended_at = status, -2, "é", 10.5
    record.prompt_tokens, record.completion_tokens = 300, 16
    tracing.end(record)
    return record


@pytest.mark.parametrize(("headers", "status"), [(CALLER, 200), ({}, 502)])
def test_the_bytes_decode_as_the_sdk_encodes_the_same_spans(
    headers: dict[str, str], status: int
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE, id_generator=Counting())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    record = _served(Tracing(provider), headers, status)
    finished = exporter.get_finished_spans()
    assert [s.name for s in finished] == [
        "POST /v1/completions",
        "flow_control.queue",
        "dispatch",
        "upstream",
    ]
    steps = iter([finished[1].context.span_id, finished[2].context.span_id])
    lean = encode_requests([record], envelope(RESOURCE, "sluiceway"), lambda: next(steps))
    decoded = ExportTraceServiceRequest.FromString(lean)
    assert decoded == sdk_encode(finished)
    (server, *_) = decoded.resource_spans[0].scope_spans[0].spans
    assert server.flags == (0x300 if headers else 0x100)  # the parent came from a header


def test_batches_are_posted_and_flushed_on_shutdown() -> None:
    bodies: list[bytes] = []

    def post(body: bytes) -> bool:
        bodies.append(body)
        return True

    provider = TracerProvider(resource=RESOURCE)
    otlp = OtlpRequests(post, provider.resource, provider.id_generator.generate_span_id)
    provider.add_span_processor(otlp)
    tracing = Tracing(provider, otlp)
    records = [_served(tracing, CALLER) for _ in range(3)]
    tracing.shutdown()
    spans = [
        span
        for body in bodies
        for resource in ExportTraceServiceRequest.FromString(body).resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert len(spans) == 12
    assert {s.trace_id.hex() for s in spans} == {"4bf92f3577b34da6a3ce929d0e0e4736"}
    servers = [s for s in spans if s.name == "POST /v1/completions"]
    assert sorted(s.span_id for s in servers) == sorted(
        r.trace.span_id.to_bytes(8, "big")  # type: ignore[union-attr]
        for r in records
    )
    assert all(s.trace_state == "vendor=abc" for s in spans)


def test_unsampled_requests_are_not_exported() -> None:
    bodies: list[bytes] = []

    def post(body: bytes) -> bool:
        bodies.append(body)
        return True

    provider = TracerProvider(resource=RESOURCE)
    otlp = OtlpRequests(post, provider.resource, lambda: 1)
    tracing = Tracing(provider, otlp)
    _served(tracing, {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"})
    otlp.shutdown()
    assert bodies == []


def test_the_sdk_exporter_lends_its_http_client() -> None:
    assert lean_transport(OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces")) is not None
    assert lean_transport(InMemorySpanExporter()) is None  # type: ignore[arg-type]


class _Collector(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        size = int(self.headers["content-length"])
        self.bodies.append((self.headers["content-type"], self.rfile.read(size)))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


def test_a_post_reaches_the_collector_through_the_lighter_transport() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1/traces"
        exporter = OTLPSpanExporter(endpoint=url)
        post = lean_transport(exporter)
        assert type(exporter._client._transport) is Urllib3HTTPTransport
        assert post is not None and post(b"\x0a\x00")
        exporter.shutdown()
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    assert _Collector.bodies == [("application/x-protobuf", b"\x0a\x00")]


def test_a_proxy_from_the_environment_keeps_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    exporter = OTLPSpanExporter(endpoint="http://collector.example:4318/v1/traces")
    assert lean_transport(exporter) is not None
    assert type(exporter._client._transport) is RequestsHTTPTransport
