"""One mechanism, three sinks: a request's record feeds the access log, the HTTP metrics and
the trace spans.

A component opens each request's record on arrival (:meth:`RequestObserver.begin`, with the
server span when tracing is on), makes it current for its own code (which adds the facts only
it knows: identity, admission, the upstream call), wraps its ASGI ``send`` with
:meth:`RequestObserver.watch` (the response head and the first body byte), and when the
handler returns, however it ends, hands the record to :meth:`RequestObserver.end`. The
component drives; nothing here calls back into it. Off sinks cost nothing: no tracing object,
no span; a line sampled out, no formatting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from prometheus_client import CollectorRegistry

from sluiceway.observability.access_log import AccessLog, check_sample, configure_access_log
from sluiceway.observability.http_metrics import HttpMetrics
from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.tracing import Tracing, tracing_from_environment
from sluiceway.wire.response_watch import watch_response

__all__ = ["RawHeaders", "RequestObserver", "Send", "observe_process"]

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
RawHeaders = list[tuple[bytes, bytes]]

_REQUEST_ID: Final = b"x-request-id"


class RequestObserver:
    """The sinks of one component (``router`` or ``coordinator``): its HTTP metrics in
    ``registry``, ``access`` and, when on, ``tracing``."""

    def __init__(
        self,
        component: str,
        registry: CollectorRegistry,
        access: AccessLog,
        tracing: Tracing | None = None,
    ) -> None:
        self.component = component
        self.metrics = HttpMetrics(component, registry)
        self.access = access
        self.tracing = tracing

    def begin(
        self, method: str, path: str, route: str, headers: RawHeaders, *, probe: bool = False
    ) -> ServedRequest:
        """The record of a request arriving now (its server span opened when tracing)."""
        record = ServedRequest.open(self.component, method, route, path, probe=probe)
        if probe:
            return record
        for name, value in headers:
            if name == _REQUEST_ID:
                record.request_id = value.decode("latin-1")
        tracing = self.tracing
        if tracing is not None:
            # Only the propagators' headers are read (none, usually: nothing decoded).
            fields = tracing.raw_fields
            text = {
                n.decode("latin-1"): v.decode("latin-1") for n, v in headers if n.lower() in fields
            }
            tracing.begin(record, text)
        return record

    def end(self, record: ServedRequest) -> None:
        """The request is over: close it and feed the sinks."""
        record.end()
        self.metrics.observe(record)
        tracing = self.tracing
        if tracing is None:
            self.access.write(record)
            return
        self.access.write(record, tracing.trace_id(record))
        tracing.end(record)

    def watch(self, record: ServedRequest, send: Send) -> Send:
        """``send``, the response head and first body byte noted on ``record``: wrap the
        server's ``send`` with it, outermost."""
        return watch_response(send, record.response)


def observe_process(service: str, log_format: str, access_sample: float) -> Tracing | None:
    """A command's set-up: the access log written as ``log_format`` when sampled at all, and
    the tracing the ``OTEL_*`` variables ask for (``service``: the default service name)."""
    if check_sample(access_sample) > 0.0:
        configure_access_log(log_format)
    return tracing_from_environment(service)
