"""HTTP metrics of the router and the coordinator, fed by each request's record.

``sluiceway_<component>_http_requests_total{route, method, status, band}``,
``..._http_request_duration_seconds{route, status_class, band}`` and, for streamed answers,
``..._http_time_to_first_byte_seconds{route, band}`` (names in
:mod:`sluiceway.observability.names`). ``route`` is the route table's template, never the raw
path; ``band`` is the flow-control priority on the router and the stamped objective on the
coordinator (empty when the request got none). Label children are cached per label tuple, so a
request costs three dictionary lookups and three updates.
"""

from __future__ import annotations

from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Histogram

from sluiceway.observability.names import (
    HTTP_DURATION_LABELS,
    HTTP_LABELS,
    HTTP_METRICS,
    HTTP_TTFB_LABELS,
)
from sluiceway.observability.served_request import ServedRequest

__all__ = ["DURATION_BUCKETS", "TTFB_BUCKETS", "HttpMetrics", "band_of", "status_class"]

DURATION_BUCKETS: Final = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    120,
    300,
)
TTFB_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


def band_of(record: ServedRequest) -> str:
    """The ``band`` label: the priority when flow control placed the request, else the
    objective (the coordinator's stamp), else empty."""
    if record.priority is not None:
        return str(record.priority)
    return record.objective if record.component == "coordinator" else ""


def status_class(status: int) -> str:
    return f"{status // 100}xx"


class HttpMetrics:
    """The three HTTP metrics of one component, in ``registry``."""

    def __init__(self, component: str, registry: CollectorRegistry) -> None:
        total, duration, ttfb = HTTP_METRICS[component]
        self._total = Counter(
            total.removesuffix("_total"),
            f"Requests the {component} answered, by route template, method, status and band.",
            HTTP_LABELS,
            registry=registry,
        )
        self._duration = Histogram(
            duration,
            f"Seconds from a request's arrival at the {component} to its last byte.",
            HTTP_DURATION_LABELS,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self._ttfb = Histogram(
            ttfb,
            f"Seconds from a streamed request's arrival at the {component} to its first byte.",
            HTTP_TTFB_LABELS,
            registry=registry,
            buckets=TTFB_BUCKETS,
        )
        self._caches: tuple[dict[tuple[str, ...], Any], ...] = ({}, {}, {})

    def _child(self, which: int, metric: Any, values: tuple[str, ...]) -> Any:
        cache = self._caches[which]
        found = cache.get(values)
        if found is None:
            found = cache[values] = metric.labels(*values)
        return found

    def observe(self, record: ServedRequest) -> None:
        band = band_of(record)
        route, status = record.route, record.status
        self._child(0, self._total, (route, record.method, str(status), band)).inc()
        duration = self._child(1, self._duration, (route, status_class(status), band))
        duration.observe(record.duration_seconds)
        ttfb = record.ttfb_seconds
        if record.stream and ttfb is not None:
            self._child(2, self._ttfb, (route, band)).observe(ttfb)
