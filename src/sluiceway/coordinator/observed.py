"""The coordinator's operator signals: access log, HTTP metrics, traces; and, mounted in a
router, its metrics on the router's ``/metrics``.

:func:`observed_app` wraps the coordinator's ASGI app: every request gets a
:class:`~sluiceway.observability.served_request.ServedRequest` (route template, mode, tenant),
current in :data:`CURRENT` while it is handled. :class:`ObservedForwarder` adds, on
passthrough and untouched forwarding (not a queued request's catalog lookup), the objective
and fairness id the coordinator stamped and the upstream call's start, and sends the
``forward`` span's context upstream in ``traceparent`` (in place of the caller's, which is its
parent). Queued requests keep the caller's ``traceparent`` in their metadata.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, MutableMapping, Sequence
from contextvars import ContextVar
from typing import Any, Final

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.app import Coordinator
from sluiceway.coordinator.forwarding import ForwardedReply, Forwarder
from sluiceway.coordinator.identity import TenantIdentity
from sluiceway.observability.access_log import AccessLog
from sluiceway.observability.request_observer import RequestObserver, Send
from sluiceway.observability.served_request import ServedRequest, route_template
from sluiceway.observability.tracing import Tracing, inject_trace
from sluiceway.router.app import ASGIApp
from sluiceway.router.gateway import Receive
from sluiceway.router.routes import ROUTES
from sluiceway.wire import headers as h

__all__ = ["CURRENT", "ObservedForwarder", "observed_app", "show_metrics_on"]

CURRENT: Final[ContextVar[ServedRequest | None]] = ContextVar(
    "sluiceway_coordinator_request", default=None
)
_PROBES: Final = frozenset({"/healthz", "/readyz", "/metrics"})
# Paths are labelled by the router's route table (what the coordinator forwards) and its own.
_ROUTES: Final = frozenset({*ROUTES, *_PROBES, "/v1/models"})
_TEMPLATES: Final = (("/v1/requests/", "/v1/requests/{id}"),)
_TRACE_HEADERS: Final = frozenset({"traceparent", "tracestate"})
# Modes whose upstream calls are lookups (the model catalog), not the request itself.
_QUEUED: Final = frozenset({h.MODE_WAIT, h.MODE_ENQUEUE})


class _Observed:
    """The coordinator's app, each request observed."""

    def __init__(self, app: ASGIApp, observer: RequestObserver, params: AsyncBrokerParams) -> None:
        self._app = app
        self._observer = observer
        self._mode_header = params.mode_header.lower()
        self._identity = TenantIdentity(
            tenant_header=params.tenant_header, api_keys=params.api_keys
        )

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path: str = scope["path"]
        raw = scope.get("headers") or []
        route = route_template(path, _ROUTES, _TEMPLATES)
        record = self._observer.begin(scope["method"], path, route, raw, probe=path in _PROBES)
        if not record.probe:
            self._identify(record, {n.decode("latin-1"): v.decode("latin-1") for n, v in raw})
        token = CURRENT.set(record)
        try:
            await self._app(scope, receive, self._observer.watch(record, send))
        finally:
            CURRENT.reset(token)
            self._observer.end(record)

    def _identify(self, record: ServedRequest, headers: dict[str, str]) -> None:
        mode = headers.get(self._mode_header, "").strip().lower()
        record.mode = mode if mode in h.ASYNC_MODES else ""
        try:
            record.tenant = self._identity.tenant(headers)
        except RequestRejected:  # the app answers it (401, 400); the line says who is unknown
            record.tenant = ""


def observed_app(
    front: Coordinator,
    params: AsyncBrokerParams,
    *,
    access_sample: float = 0.0,
    tracing: Tracing | None = None,
) -> ASGIApp:
    """``front``'s app with its requests observed; its HTTP metrics join ``front``'s registry
    (call once per coordinator)."""
    access = AccessLog(access_sample)
    observer = RequestObserver("coordinator", front.metrics.registry, access, tracing)
    return _Observed(front.app(), observer, params)


class ObservedForwarder:
    """A :class:`Forwarder` that notes on the current record what the coordinator stamped and
    when the upstream call began, and carries the trace context; ``endpoint`` names the
    upstream in the access log."""

    def __init__(self, inner: Forwarder, params: AsyncBrokerParams, endpoint: str = "") -> None:
        self._inner = inner
        self._objective = params.objective_header.lower()
        self._fairness = params.fairness_header.lower()
        self._endpoint = endpoint

    async def open(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> ForwardedReply:
        record = CURRENT.get()
        if record is not None and record.mode not in _QUEUED:
            headers = self._note(record, headers)
        return await self._inner.open(method, target, headers, body)

    def _note(
        self, record: ServedRequest, headers: Sequence[tuple[str, str]]
    ) -> Sequence[tuple[str, str]]:
        record.upstream_at = time.perf_counter()
        record.endpoint = self._endpoint
        for name, value in headers:
            lower = name.lower()
            if lower == self._objective:
                record.objective = value
            elif lower == self._fairness:
                record.tenant = value
        if record.trace is None:
            return headers
        carrier: dict[str, str] = {}
        inject_trace(record, carrier, "forward")
        kept = [(k, v) for k, v in headers if k.lower() not in _TRACE_HEADERS]
        return [*kept, *carrier.items()]

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Shown(Collector):
    """Another registry's metrics, collected with this one's."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        return self._registry.collect()

    def describe(self) -> Iterable[Metric]:
        """What is there now, so registering it fails on a name both registries hold."""
        return self._registry.collect()


def show_metrics_on(registry: CollectorRegistry, front: Coordinator) -> None:
    """``front``'s metrics on ``registry``'s page too (a router's, when mounted in it);
    ValueError when a name is in both."""
    registry.register(_Shown(front.metrics.registry))
