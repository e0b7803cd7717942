"""OpenTelemetry traces from request records (the ``otel`` extra).

Per request a server span (``POST /v1/chat/completions``), child of the caller's
``traceparent``; inside it, from the record's times, ``flow_control.queue`` (arrival in flow
control to dispatch), ``dispatch`` (dispatch, the endpoint pick, to the handler's next step)
and a client span ``upstream`` (the upstream call to the last byte), whose context goes
upstream in ``traceparent``. The coordinator's client span is ``forward``.

Nothing of the SDK is live while a request runs: its ids and the sampler's decision are drawn
on arrival (the client span's id as the upstream call starts), and its spans are made from the
record in one go when it is over (``trace_spans``). With OTLP they are encoded by
``otlp_export`` (four spans cost about a tenth of the SDK's spans and encoder); other
exporters get them as the SDK's ``ReadableSpan`` objects.

Set-up is the standard ``OTEL_*`` variables (:func:`tracing_from_environment`): an OTLP/HTTP
exporter when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is
set (``OTEL_TRACES_EXPORTER=console`` prints spans instead); ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` (and ``_ARG``), ``OTEL_PROPAGATORS`` and
the ``OTEL_BSP_*`` batch settings are read by the SDK itself. Without an exporter, with
``OTEL_SDK_DISABLED=true``, or without the extra installed, there is no :class:`Tracing` and
the request path never touches OpenTelemetry.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.trace_spans import (
    CLIENT,
    INTERNAL,
    SERVER,
    RequestTrace,
    SpanData,
    spans_of,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from sluiceway.observability.otlp_export import OtlpRequests

__all__ = ["Tracing", "exporter_choice", "inject_trace", "tracing_from_environment"]

log = logging.getLogger(__name__)

_HTTP_PROTOBUF: Final = "http/protobuf"


def exporter_choice(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The exporter the ``OTEL_*`` variables ask for (``otlp``, ``console`` or None: tracing
    off) and, when one was asked for but cannot be had, why (pure)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None, None
    kind = env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if kind == "none":
        return None, None
    if kind == "console":
        return "console", None
    if kind != "otlp":
        return None, f"OTEL_TRACES_EXPORTER={kind} is not supported (otlp, console, none)"
    if not (
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    ):
        return None, None  # no exporter configured: tracing off, nothing to say
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", _HTTP_PROTOBUF
    )
    if protocol.strip().lower() != _HTTP_PROTOBUF:
        return None, f"OTLP protocol {protocol} is not supported (http/protobuf only)"
    return "otlp", None


def tracing_from_environment(service: str, env: Mapping[str, str] | None = None) -> Tracing | None:
    """The process's tracing as the ``OTEL_*`` variables configure it (``service``: the
    default ``service.name``), or None when tracing is off (a warning says why when it was
    asked for and cannot be had)."""
    choice, problem = exporter_choice(os.environ if env is None else env)
    if problem is not None:
        log.warning("tracing off: %s", problem)
    if choice is None:
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SpanExporter,
        )
    except ImportError:
        log.warning("tracing off: OTEL_* asks for traces but the otel extra is not installed")
        return None
    provider = TracerProvider(resource=Resource.create(_default_service(service)))
    exporter: SpanExporter
    if choice == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        from sluiceway.observability.otlp_export import OtlpRequests, lean_transport

        exporter = OTLPSpanExporter()
        post = lean_transport(exporter)
        if post is not None:
            otlp = OtlpRequests(post, provider.resource, provider.id_generator.generate_span_id)
            provider.add_span_processor(otlp)  # flushed with the provider, at exit too
            return Tracing(provider, otlp)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return Tracing(provider)


def _default_service(service: str) -> dict[str, str]:
    """``service`` as ``service.name`` unless the environment names one (the SDK lets given
    attributes win over ``OTEL_RESOURCE_ATTRIBUTES``)."""
    resource = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    if os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in resource.replace(" ", ""):
        return {}
    return {"service.name": service}


@dataclass(slots=True, eq=False)
class _Live(RequestTrace):
    """A traced request's ids and the tracing that drew them."""

    owner: Tracing | None = None


def inject_trace(record: ServedRequest, headers: MutableMapping[str, str], name: str) -> None:
    """Open ``record``'s client span ``name`` and put its context in ``headers`` (nothing when
    the record is not traced)."""
    live = record.trace
    if isinstance(live, _Live) and live.owner is not None:
        live.owner.inject(record, headers, name)


class Tracing:
    """Spans from records: ids and sampling by ``provider`` (its sampler, id generator and
    resource); the spans go to ``otlp`` when given (encoded directly), else to the
    provider's span processors as ``ReadableSpan`` objects (tests give an in-memory
    exporter, ``OTEL_TRACES_EXPORTER=console`` prints)."""

    def __init__(self, provider: TracerProvider, otlp: OtlpRequests | None = None) -> None:
        from opentelemetry import propagate, trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = provider
        self._otlp = otlp
        self._sampler = provider.sampler
        self._ids = provider.id_generator
        self._trace = trace
        self._propagate = propagate
        textmap = propagate.get_global_textmap()
        # The headers the configured propagators read: without any, there is nothing to extract.
        self.fields = frozenset(textmap.fields)
        self.raw_fields = frozenset(f.encode("latin-1") for f in self.fields)
        # W3C trace context alone (baggage aside: the router attaches none): the header is
        # written here, without a context object.
        inner = getattr(textmap, "_propagators", [textmap])
        plain = [p for p in inner if type(p).__name__ != "W3CBaggagePropagator"]
        self._w3c = len(plain) == 1 and type(plain[0]) is TraceContextTextMapPropagator
        self._readable = _Readable(provider) if otlp is None else None

    def begin(self, record: ServedRequest, headers: Mapping[str, str]) -> None:
        """Draw ``record``'s ids, child of the context in ``headers`` (lower case), and decide
        whether its spans are sampled."""
        parent_ctx = None if self.fields.isdisjoint(headers) else self._propagate.extract(headers)
        parent = None
        if parent_ctx is not None:
            found = self._trace.get_current_span(parent_ctx).get_span_context()
            parent = found if found.is_valid else None
        trace_id = parent.trace_id if parent is not None else self._ids.generate_trace_id()
        name = f"{record.method} {record.route}"
        kind = self._trace.SpanKind.SERVER
        sampling = self._sampler.should_sample(parent_ctx, trace_id, name, kind)
        state = sampling.trace_state
        record.trace = _Live(
            trace_id,
            self._ids.generate_span_id(),
            parent.span_id if parent is not None else 0,
            parent.is_remote if parent is not None else False,
            sampling.decision.is_sampled(),  # type: ignore[no-untyped-call]
            state.to_header() if state else "",
            parent_ctx,
            owner=self,
        )

    def inject(self, record: ServedRequest, headers: MutableMapping[str, str], name: str) -> None:
        """Open the client span ``name`` (the upstream call, now) and put its context in
        ``headers``, replacing the caller's."""
        live = record.trace
        if not isinstance(live, _Live):
            return
        if not live.client_id:
            live.client_id = self._ids.generate_span_id()
            live.client_name = name
        headers.pop("traceparent", None)
        headers.pop("tracestate", None)
        flags = "01" if live.sampled else "00"
        if self._w3c:
            headers["traceparent"] = f"00-{live.trace_id:032x}-{live.client_id:016x}-{flags}"
            if live.trace_state:
                headers["tracestate"] = live.trace_state
            return
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

        client = SpanContext(
            live.trace_id,
            live.client_id,
            False,
            TraceFlags(int(flags, 16)),
            TraceState.from_header([live.trace_state]) if live.trace_state else None,
        )
        context = self._trace.set_span_in_context(NonRecordingSpan(client))
        self._propagate.inject(headers, context=context)

    def trace_id(self, record: ServedRequest) -> str | None:
        """The record's trace id (32 hex digits), for its access-log line."""
        live = record.trace
        return format(live.trace_id, "032x") if isinstance(live, RequestTrace) else None

    def end(self, record: ServedRequest) -> None:
        """The request is over: its spans, when sampled, from its record."""
        live = record.trace
        if not isinstance(live, RequestTrace) or not live.sampled:
            return
        if self._otlp is not None:
            self._otlp.add(record)
        elif self._readable is not None:
            self._readable.end(spans_of(record, live, self._ids.generate_span_id), live)

    def shutdown(self) -> None:
        """Export what is buffered and stop."""
        self.provider.shutdown()


class _Readable:
    """Span tuples as the SDK's ``ReadableSpan``, handed to the provider's processors."""

    def __init__(self, provider: TracerProvider) -> None:
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import (
            SpanContext,
            SpanKind,
            Status,
            StatusCode,
            TraceFlags,
            TraceState,
        )

        self._processor = provider._active_span_processor
        self._resource = provider.resource
        self._scope = InstrumentationScope("sluiceway")
        self._span = ReadableSpan
        self._context = SpanContext
        self._flags = TraceFlags(TraceFlags.SAMPLED)
        self._state = TraceState
        self._kinds = {
            INTERNAL: SpanKind.INTERNAL,
            SERVER: SpanKind.SERVER,
            CLIENT: SpanKind.CLIENT,
        }
        self._error = Status(StatusCode.ERROR)
        self._unset = Status(StatusCode.UNSET)

    def end(self, spans: list[SpanData], live: RequestTrace) -> None:
        state = self._state.from_header([live.trace_state]) if live.trace_state else None
        caller = None
        if live.parent_id:
            caller = self._context(live.trace_id, live.parent_id, live.remote, self._flags, state)
        server = self._context(live.trace_id, live.span_id, False, self._flags, state)
        for span in spans:
            here = self._context(live.trace_id, span.span_id, False, self._flags, state)
            self._processor.on_end(
                self._span(
                    name=span.name,
                    context=here,
                    parent=caller if span.span_id == live.span_id else server,
                    resource=self._resource,
                    attributes=dict(span.attributes),
                    kind=self._kinds[span.kind],
                    status=self._error if span.error else self._unset,
                    start_time=span.start_ns,
                    end_time=span.end_ns,
                    instrumentation_scope=self._scope,
                )
            )
