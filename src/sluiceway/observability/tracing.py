"""OpenTelemetry traces from request records (the ``otel`` extra).

Per request a server span (``POST /v1/chat/completions``), child of the caller's
``traceparent``; inside it, from the record's times, ``flow_control.queue`` (arrival in flow
control to dispatch), ``dispatch`` (dispatch, the endpoint pick, to the handler's next step)
and a client span ``upstream`` (the upstream call to the last byte), whose context goes
upstream in ``traceparent``. The coordinator's client span is ``forward``.

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
from typing import TYPE_CHECKING, Any, Final

from sluiceway.observability.served_request import ServedRequest

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span

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
    exporter: SpanExporter
    if choice == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider = TracerProvider(resource=Resource.create(_default_service(service)))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return Tracing(provider)


def _default_service(service: str) -> dict[str, str]:
    """``service`` as ``service.name`` unless the environment names one (the SDK lets given
    attributes win over ``OTEL_RESOURCE_ATTRIBUTES``)."""
    resource = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    if os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in resource.replace(" ", ""):
        return {}
    return {"service.name": service}


@dataclass(slots=True)
class _Live:
    """A record's spans while it runs, and the tracing that made them."""

    owner: Tracing
    server: Span
    context: Context
    client: Span | None = None


def inject_trace(record: ServedRequest, headers: MutableMapping[str, str], name: str) -> None:
    """Open ``record``'s client span ``name`` and put its context in ``headers`` (nothing when
    the record is not traced)."""
    live = record.trace
    if isinstance(live, _Live):
        live.owner.inject(record, headers, name)


class Tracing:
    """Spans from records, made by ``provider`` (tests give one with an in-memory exporter)."""

    def __init__(self, provider: TracerProvider) -> None:
        from opentelemetry import propagate, trace

        self.provider = provider
        self._tracer = provider.get_tracer("sluiceway")
        self._trace = trace
        self._propagate = propagate
        # The headers the configured propagators read: without any, there is nothing to extract.
        self._fields = frozenset(propagate.get_global_textmap().fields)

    def begin(self, record: ServedRequest, headers: Mapping[str, str]) -> None:
        """Open ``record``'s server span, child of the context in ``headers`` (lower case)."""
        parent = None if self._fields.isdisjoint(headers) else self._propagate.extract(headers)
        span = self._tracer.start_span(
            f"{record.method} {record.route}",
            context=parent,
            kind=self._trace.SpanKind.SERVER,
            start_time=record.wall_ns,
            attributes={
                "http.request.method": record.method,
                "http.route": record.route,
                "url.path": record.path,
                "sluiceway.component": record.component,
            },
        )
        record.trace = _Live(self, span, self._trace.set_span_in_context(span, parent))

    def inject(self, record: ServedRequest, headers: MutableMapping[str, str], name: str) -> None:
        """Open the client span ``name`` (the upstream call, now) and put its context in
        ``headers``, replacing the caller's."""
        live = record.trace
        if not isinstance(live, _Live):
            return
        if live.client is None:
            live.client = self._tracer.start_span(
                name,
                context=live.context,
                kind=self._trace.SpanKind.CLIENT,
                start_time=record.epoch_ns(record.upstream_at),
            )
        for key in ("traceparent", "tracestate"):
            headers.pop(key, None)
        self._propagate.inject(headers, context=self._trace.set_span_in_context(live.client))

    def trace_id(self, record: ServedRequest) -> str | None:
        """The record's trace id (32 hex digits), for its access-log line."""
        live = record.trace
        if not isinstance(live, _Live):
            return None
        ctx = live.server.get_span_context()
        return format(ctx.trace_id, "032x") if ctx.is_valid else None

    def end(self, record: ServedRequest) -> None:
        """Close ``record``'s spans at its times, the steps it went through as children."""
        live = record.trace
        if not isinstance(live, _Live):
            return
        server = live.server
        end_ns = record.epoch_ns(record.ended_at)
        if server.is_recording():
            server.set_attributes(_attributes(record))
            if record.status >= 500:
                server.set_status(self._trace.StatusCode.ERROR)
            self._steps(record, live.context)
        if live.client is not None:
            live.client.set_attribute("http.response.status_code", record.status)
            if record.endpoint:
                live.client.set_attribute("server.address", record.endpoint)
            live.client.end(end_time=end_ns)
        server.end(end_time=end_ns)

    def _steps(self, record: ServedRequest, context: Context) -> None:
        queued, dispatched, admitted = record.queued_at, record.dispatched_at, record.admitted_at
        if queued:
            until = dispatched or admitted or record.ended_at
            self._span("flow_control.queue", record, context, queued, until)
        if dispatched and admitted:
            where = {"server.address": record.endpoint} if record.endpoint else None
            self._span("dispatch", record, context, dispatched, admitted, where)

    def _span(
        self,
        name: str,
        record: ServedRequest,
        context: Context,
        start: float,
        until: float,
        attributes: dict[str, Any] | None = None,
    ) -> None:
        span = self._tracer.start_span(
            name, context=context, start_time=record.epoch_ns(start), attributes=attributes
        )
        span.end(end_time=record.epoch_ns(max(start, until)))

    def shutdown(self) -> None:
        """Export what is buffered and stop."""
        self.provider.shutdown()


def _attributes(record: ServedRequest) -> dict[str, Any]:
    found: dict[str, Any] = {"http.response.status_code": record.status}
    optional: dict[str, Any] = {
        "sluiceway.request_id": record.request_id,
        "sluiceway.tenant": record.tenant,
        "sluiceway.objective": record.objective,
        "sluiceway.priority": record.priority,
        "sluiceway.mode": record.mode,
        "sluiceway.reason": record.reason,
        "sluiceway.endpoint": record.endpoint,
        "gen_ai.request.model": record.model,
        "gen_ai.usage.input_tokens": record.prompt_tokens,
        "gen_ai.usage.output_tokens": record.completion_tokens,
    }
    found.update((k, v) for k, v in optional.items() if v is not None and v != "")
    return found
