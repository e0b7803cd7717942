"""A traced request's ids, and its spans as plain tuples made from its record once it is over
(pure; no OpenTelemetry import).

Nothing is live while the request runs: its ids are drawn when it arrives (the client span's
when the upstream call starts, as its context goes upstream), and the spans are made in one go
from the record's times at the end. The SDK's processors (tests, the console) get them as
``ReadableSpan`` objects; the OTLP exporter encodes these tuples directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, NamedTuple

from sluiceway.observability.served_request import ServedRequest

__all__ = ["CLIENT", "INTERNAL", "SERVER", "Attribute", "RequestTrace", "SpanData", "spans_of"]

# OTLP's span kinds (``Span.SpanKind`` in trace.proto).
INTERNAL: Final = 1
SERVER: Final = 2
CLIENT: Final = 3

Attribute = tuple[str, str | int]


@dataclass(slots=True, eq=False)
class RequestTrace:
    """``parent_id``: the caller's span (0: a new trace); ``remote``: that parent came from a
    header; ``trace_state``: the W3C ``tracestate`` (header form, "" for none); ``parent``: the
    caller's context as the propagators read it (kept for them, None without one);
    ``client_id``, ``client_name``: the client span, once the upstream call started."""

    trace_id: int
    span_id: int
    parent_id: int
    remote: bool
    sampled: bool
    trace_state: str = ""
    parent: object | None = None
    client_id: int = 0
    client_name: str = ""


class SpanData(NamedTuple):
    """One finished span: ``kind`` is OTLP's number; ``error``: status ERROR (else unset)."""

    name: str
    span_id: int
    parent_id: int
    kind: int
    start_ns: int
    end_ns: int
    attributes: tuple[Attribute, ...]
    error: bool = False


def spans_of(
    record: ServedRequest, trace: RequestTrace, new_id: Callable[[], int]
) -> list[SpanData]:
    """``record``'s spans, the server span first: its steps (``flow_control.queue``,
    ``dispatch``) and its client span as children; ``new_id`` draws the steps' span ids."""
    end_ns = record.epoch_ns(record.ended_at)
    server = trace.span_id
    found = [
        SpanData(
            f"{record.method} {record.route}",
            server,
            trace.parent_id,
            SERVER,
            record.wall_ns,
            end_ns,
            _server_attributes(record),
            record.status >= 500,
        )
    ]
    where: tuple[Attribute, ...] = (("server.address", record.endpoint),) if record.endpoint else ()
    queued, dispatched, admitted = record.queued_at, record.dispatched_at, record.admitted_at
    if queued:
        until = dispatched or admitted or record.ended_at
        found.append(_step("flow_control.queue", record, new_id(), server, queued, until, ()))
    if dispatched and admitted:
        found.append(_step("dispatch", record, new_id(), server, dispatched, admitted, where))
    if trace.client_id:
        status: tuple[Attribute, ...] = (("http.response.status_code", record.status),)
        found.append(
            SpanData(
                trace.client_name,
                trace.client_id,
                server,
                CLIENT,
                record.epoch_ns(record.upstream_at),
                end_ns,
                status + where,
            )
        )
    return found


def _step(
    name: str,
    record: ServedRequest,
    span_id: int,
    parent: int,
    start: float,
    until: float,
    attributes: tuple[Attribute, ...],
) -> SpanData:
    return SpanData(
        name,
        span_id,
        parent,
        INTERNAL,
        record.epoch_ns(start),
        record.epoch_ns(max(start, until)),
        attributes,
    )


def _server_attributes(record: ServedRequest) -> tuple[Attribute, ...]:
    """The server span's attributes; empty facts are left out."""
    found: list[Attribute] = [
        ("http.request.method", record.method),
        ("http.route", record.route),
        ("url.path", record.path),
        ("sluiceway.component", record.component),
        ("http.response.status_code", record.status),
    ]
    for key, value in (
        ("sluiceway.request_id", record.request_id),
        ("sluiceway.tenant", record.tenant),
        ("sluiceway.objective", record.objective),
        ("sluiceway.priority", record.priority),
        ("sluiceway.mode", record.mode),
        ("sluiceway.reason", record.reason),
        ("sluiceway.endpoint", record.endpoint),
        ("gen_ai.request.model", record.model),
        ("gen_ai.usage.input_tokens", record.prompt_tokens),
        ("gen_ai.usage.output_tokens", record.completion_tokens),
    ):
        if value is not None and value != "":
            found.append((key, value))
    return tuple(found)
