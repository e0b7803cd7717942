"""The router's Prometheus metrics: ``llm_d_epp_`` names, six with deprecated twins, and
sluiceway's own ``sluiceway_router_upstream_failures_total`` and
``sluiceway_router_upstream_retries_total``.

Names come from :mod:`sluiceway.observability.names`. The six twinned series are written under
both prefixes. Occupancy gauges (pool saturation, capacity utilization, stale endpoints, reclaim
state, revocation outcomes) are read at scrape time, not on the hot path. Saturation in
particular is the pool's state when scraped: a value kept from the last dispatch cycle would
show the load before that cycle's dispatches (3 of 4 while 4 run and more wait), and a gate
reading it would open while the pool is full.
Fairness ids are client input: at most 1,000 distinct values get their own series, the rest
are labelled ``other``. While the router scrapes its endpoints, each endpoint's failed scrapes
and the age of its reading are read from the load source when Prometheus scrapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from sluiceway.flowcontrol.controller import FlowController
from sluiceway.observability.names import (
    INFERENCE_POOL_READY_PODS,
    ROUTER_ENDPOINT_READING_AGE_SECONDS,
    ROUTER_ENDPOINT_SCRAPE_FAILURES_TOTAL,
    ROUTER_UPSTREAM_FAILURE_PHASES,
    ROUTER_UPSTREAM_FAILURES_TOTAL,
    ROUTER_UPSTREAM_RETRIES_TOTAL,
    router_metric,
)

__all__ = ["RouterMetrics"]

Stages = tuple[tuple[str, float], ...]  # (stage, saturation) pairs, ``effective`` last
Readings = Iterable[tuple[str, int, float]]  # (endpoint, scrape failures, reading age)

_QUEUE_BUCKETS = (
    0.0001,
    0.0005,
    0.001,
    0.005,
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2,
    5,
    10,
    20,
    30,
    60,
)
_CYCLE_BUCKETS = (0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
_CONFIRM_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_QUEUE_LABELS = ("fairness_id", "priority", "inference_pool", "model_name", "target_model_name")
_DURATION_LABELS = (
    "fairness_id",
    "priority",
    "outcome",
    "inference_pool",
    "model_name",
    "target_model_name",
)
_FAIRNESS_CAP = 1000
_OTHER = "other"


class _Twin:
    """One metric under both prefixes, children cached per label tuple."""

    def __init__(
        self,
        kind: type[Any],
        name: str,
        doc: str,
        labels: tuple[str, ...],
        registry: CollectorRegistry,
        **kw: Any,
    ) -> None:
        self._metrics = [
            kind(router_metric(name), doc, labels, registry=registry, **kw),
            kind(router_metric(name, deprecated=True), doc, labels, registry=registry, **kw),
        ]
        self._children: dict[tuple[str, ...], list[Any]] = {}

    def of(self, *values: str) -> list[Any]:
        if not values:
            return self._metrics
        found = self._children.get(values)
        if found is None:
            found = self._children[values] = [m.labels(*values) for m in self._metrics]
        return found


class RouterMetrics:
    """One registry per router (tests run several)."""

    def __init__(self, pool: str, registry: CollectorRegistry | None = None) -> None:
        self.pool = pool
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self._queue_duration = _Twin(
            Histogram,
            "flow_control_request_queue_duration_seconds",
            "Seconds from enqueue to the terminal outcome.",
            _DURATION_LABELS,
            r,
            buckets=_QUEUE_BUCKETS,
        )
        self._cycle = _Twin(
            Histogram,
            "flow_control_dispatch_cycle_duration_seconds",
            "Seconds one dispatch cycle took.",
            (),
            r,
            buckets=_CYCLE_BUCKETS,
        )
        self._enqueue = _Twin(
            Histogram,
            "flow_control_request_enqueue_duration_seconds",
            "Seconds to admit or reject one request into the queue.",
            ("fairness_id", "priority", "outcome"),
            r,
            buckets=_CYCLE_BUCKETS,
        )
        self._queue_size = _Twin(
            Gauge, "flow_control_queue_size", "Requests inside flow control.", _QUEUE_LABELS, r
        )
        self._queue_bytes = _Twin(
            Gauge,
            "flow_control_queue_bytes",
            "Bytes of requests inside flow control.",
            _QUEUE_LABELS,
            r,
        )
        self._requests = Counter(
            router_metric("flow_control_requests_total"),
            "Requests by flow-control outcome.",
            ("outcome", "priority", "inference_pool"),
            registry=r,
        )
        self._issued = Counter(
            router_metric("flow_control_revocations_issued_total"),
            "In-flight evictions issued, by demand band.",
            ("priority", "inference_pool"),
            registry=r,
        )
        self._confirm = Histogram(
            router_metric("flow_control_revocation_confirmation_seconds"),
            "Seconds from an eviction to the end of its stream.",
            ("inference_pool",),
            registry=r,
            buckets=_CONFIRM_BUCKETS,
        )
        self._upstream_failures = Counter(
            ROUTER_UPSTREAM_FAILURES_TOTAL,
            "Model-server calls that failed: before_response (502) or mid_stream (error event).",
            ("phase", "inference_pool"),
            registry=r,
        )
        for phase in ROUTER_UPSTREAM_FAILURE_PHASES:  # both series exist from the start
            self._upstream_failures.labels(phase, pool)
        self._upstream_retries = Counter(
            ROUTER_UPSTREAM_RETRIES_TOTAL,
            "Requests retried on another endpoint after theirs failed before the response.",
            ("inference_pool",),
            registry=r,
        ).labels(pool)
        self._fairness: set[str] = set()

    def fairness_label(self, fairness_id: str) -> str:
        """``fairness_id`` as a label value, capped in cardinality."""
        if fairness_id in self._fairness:
            return fairness_id
        if len(self._fairness) >= _FAIRNESS_CAP:
            return _OTHER
        self._fairness.add(fairness_id)
        return fairness_id

    def queued(self, labels: tuple[str, str, str, str, str], size: int, delta: int) -> None:
        """A request enters (+1) or leaves (-1) flow control; ``labels`` as _QUEUE_LABELS."""
        for g in self._queue_size.of(*labels):
            g.inc(delta)
        for g in self._queue_bytes.of(*labels):
            g.inc(delta * size)

    def finished(self, labels: tuple[str, str, str, str, str], outcome: str, waited: float) -> None:
        """A request's terminal flow-control outcome."""
        fid, prio, pool, model, target = labels
        for hist in self._queue_duration.of(fid, prio, outcome, pool, model, target):
            hist.observe(waited)
        self._requests.labels(outcome, prio, pool).inc()

    def enqueue(self, fairness: str, priority: str, outcome: str, seconds: float) -> None:
        for hist in self._enqueue.of(fairness, priority, outcome):
            hist.observe(seconds)

    def cycle(self, seconds: float) -> None:
        for hist in self._cycle.of():
            hist.observe(seconds)

    def upstream_failed(self, *, mid_stream: bool) -> None:
        """A model-server call failed, before the response started or mid-stream."""
        phase = ROUTER_UPSTREAM_FAILURE_PHASES[1 if mid_stream else 0]
        self._upstream_failures.labels(phase, self.pool).inc()

    def upstream_retried(self) -> None:
        """A request moved to another endpoint (failover)."""
        self._upstream_retries.inc()

    def revocation_issued(self, demand_priority: int) -> None:
        self._issued.labels(str(demand_priority), self.pool).inc()

    def revocation_confirmed(self, seconds: float) -> None:
        self._confirm.labels(self.pool).observe(seconds)

    def watch_readings(self, readings: Callable[[], Readings]) -> None:
        """Register the per-endpoint scrape metrics, read from ``readings()`` when scraped."""
        self.registry.register(_ReadingsCollector(self.pool, readings))

    def watch(
        self,
        controller: Callable[[], FlowController | None],
        stale: Callable[[], int],
        saturation: Callable[[], Stages],
    ) -> None:
        """Register the scrape-time collector over the live controller and pool."""
        self.registry.register(_ControllerCollector(self.pool, controller, stale, saturation))

    def watch_pool(self, ready: Callable[[], int]) -> None:
        """Register ``inference_pool_ready_pods``: ``ready()`` (the endpoints taking traffic)
        when scraped."""
        self.registry.register(_PoolCollector(self.pool, ready))


class _PoolCollector(Collector):
    def __init__(self, pool: str, ready: Callable[[], int]) -> None:
        self._pool = pool
        self._ready = ready

    def collect(self) -> Iterator[Any]:
        g = GaugeMetricFamily(
            INFERENCE_POOL_READY_PODS,
            "Endpoints taking traffic (healthy, not draining).",
            labels=["name"],
        )
        g.add_metric([self._pool], self._ready())
        yield g


class _ControllerCollector(Collector):
    def __init__(
        self,
        pool: str,
        controller: Callable[[], FlowController | None],
        stale: Callable[[], int],
        saturation: Callable[[], Stages],
    ) -> None:
        self._pool = pool
        self._controller = controller
        self._stale = stale
        self._saturation = saturation

    def collect(self) -> Iterator[Any]:
        yield from self._saturation_now()
        stale = GaugeMetricFamily(
            router_metric("flow_control_stale_endpoints"),
            "Endpoints with stale or missing metrics.",
            labels=["detector"],
        )
        stale.add_metric(["default"], self._stale())
        yield stale
        fc = self._controller()
        if fc is None:
            return
        yield from self._capacity(fc)
        yield from self._eviction_metrics(fc)

    def _saturation_now(self) -> Iterator[Any]:
        stages = self._saturation()
        if not stages:
            return
        for deprecated in (False, True):
            g = GaugeMetricFamily(
                router_metric("flow_control_pool_saturation", deprecated=deprecated),
                "Pool saturation when scraped (1.0 = the detector's set point).",
                labels=["inference_pool", "stage"],
            )
            for stage, value in stages:
                g.add_metric([self._pool, stage], value)
            yield g

    def _capacity(self, fc: FlowController) -> Iterator[Any]:
        reqs = GaugeMetricFamily(
            router_metric("flow_control_capacity_utilization_requests"),
            "Queued requests / band capacity.",
            labels=["priority", "inference_pool"],
        )
        size = GaugeMetricFamily(
            router_metric("flow_control_capacity_utilization_bytes"),
            "Queued bytes / band capacity.",
            labels=["priority", "inference_pool"],
        )
        for band in fc.bands:
            s = band.settings
            reqs.add_metric([str(band.priority), self._pool], band.queued / s.max_requests)
            size.add_metric([str(band.priority), self._pool], band.bytes / s.max_bytes)
        yield reqs
        yield size
        settings, totals = fc.settings, fc.totals
        if settings.max_requests:
            g = GaugeMetricFamily(
                router_metric("flow_control_global_capacity_utilization_requests"),
                "Queued requests / global capacity.",
                labels=["inference_pool"],
            )
            g.add_metric([self._pool], totals.queued / settings.max_requests)
            yield g
        if settings.max_bytes:
            g = GaugeMetricFamily(
                router_metric("flow_control_global_capacity_utilization_bytes"),
                "Queued bytes / global capacity.",
                labels=["inference_pool"],
            )
            g.add_metric([self._pool], totals.bytes / settings.max_bytes)
            yield g

    def _eviction_metrics(self, fc: FlowController) -> Iterator[Any]:
        rec = fc.evictor
        target = GaugeMetricFamily(
            router_metric("flow_control_reclaim_target"),
            "Last eviction deficit (saturation - ceiling).",
            labels=["inference_pool"],
        )
        target.add_metric([self._pool], rec.last_target)
        yield target
        pending = GaugeMetricFamily(
            router_metric("flow_control_pending_reclaim"),
            "Outstanding and cooling eviction debits.",
            labels=["inference_pool"],
        )
        pending.add_metric([self._pool], rec.pending())
        yield pending
        total = CounterMetricFamily(
            router_metric("flow_control_revocations_total"),
            "Evictions resolved, by outcome.",
            labels=["outcome", "inference_pool"],
        )
        total.add_metric(["confirmed", self._pool], rec.confirmed)
        total.add_metric(["timed_out", self._pool], rec.timed_out)
        yield total


class _ReadingsCollector(Collector):
    def __init__(self, pool: str, readings: Callable[[], Readings]) -> None:
        self._pool = pool
        self._readings = readings

    def collect(self) -> Iterator[Any]:
        labels = ["endpoint", "inference_pool"]
        failures = CounterMetricFamily(
            ROUTER_ENDPOINT_SCRAPE_FAILURES_TOTAL,
            "Scrapes of the endpoint's /metrics that failed (unreachable, not 200, timed out).",
            labels=labels,
        )
        age = GaugeMetricFamily(
            ROUTER_ENDPOINT_READING_AGE_SECONDS,
            "Age of the vLLM reading the endpoint's load is read from (+Inf: none, the "
            "router's own count stands in).",
            labels=labels,
        )
        for endpoint, failed, seconds in self._readings():
            failures.add_metric([endpoint, self._pool], failed)
            age.add_metric([endpoint, self._pool], seconds)
        yield failures
        yield age
