"""The processor's Prometheus metrics (upstream's names, docs/processor.md), one registry per
processor.

Names come from :mod:`sluiceway.observability.names`; labels are the queue triple
(``queue_id``, ``queue_name``, ``pool_name``). Pool-gate series carry empty queue labels, as
upstream. A per-instance :class:`CollectorRegistry` lets tests run several processors.

Counters and histograms are tallies (:mod:`sluiceway.observability.tally`): plain numbers the
event loop adds to, exported at scrape time with the exposition prometheus_client's own
``Counter`` and ``Histogram`` give. A request's path updates about seven of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

from sluiceway.broker.peek_order import EARLIEST_DEADLINE, PeekOrder
from sluiceway.observability.names import (
    GATE_AIMD_IN_FLIGHT,
    GATE_AIMD_SSTHRESH,
    GATE_AIMD_WINDOW,
    GATE_DECISION_REASONS,
    PROCESSOR_LABELS,
    PROCESSOR_PEEK_ORDER,
    processor_metric,
)
from sluiceway.observability.tally import TallyCounter, TallyHistogram, go_float

__all__ = ["PROXIMITY_BUCKETS", "Family", "ProcessorMetrics", "ProximitySnapshot", "QueueLabels"]

_LATENCY_BUCKETS = (10, 25, 50, 100, 250, 500, 1e3, 2.5e3, 5e3, 1e4, 3e4, 6e4, 1.2e5)
_RESIDENCE_BUCKETS = (
    500, 1e3, 2e3, 5e3, 1e4, 3e4, 6e4, 1.2e5, 3e5, 6e5, 1.8e6, 3.6e6, 7.2e6, 2.16e7, 4.32e7, 8.64e7,
)  # fmt: skip
_MESSAGE_BUCKETS = (100, 1e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6)
# Deadline proximity buckets in seconds (upstream: 0, 1s, 5s, ... 24h).
PROXIMITY_BUCKETS: tuple[float, ...] = (
    0, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400,
)  # fmt: skip


class QueueLabels(NamedTuple):
    """The queue triple; pool-level series use empty queue fields. A tuple, so that the
    lookup of a queue's series on every event of a request's path hashes in C."""

    queue_id: str
    queue_name: str
    pool_name: str

    def values(self) -> tuple[str, str, str]:
        return (self.queue_id, self.queue_name, self.pool_name)

    @classmethod
    def of_pool(cls, pool_id: str) -> QueueLabels:
        """The labels of a pool-level series (pool gates): empty queue fields, as upstream."""
        return cls("", "", pool_id)


class Family:
    """A labelled gauge whose children are looked up once per label set."""

    def __init__(self, metric: Gauge) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], Gauge] = {}

    def labels(self, *values: str) -> Gauge:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


def _counter(
    registry: CollectorRegistry, name: str, doc: str, extra: Sequence[str] = ()
) -> TallyCounter:
    labels = [*PROCESSOR_LABELS, *extra]
    return TallyCounter(processor_metric(name), doc, labels, registry=registry)


def _gauge(registry: CollectorRegistry, name: str, doc: str, labels: Sequence[str]) -> Family:
    return Family(Gauge(processor_metric(name), doc, list(labels), registry=registry))


def _own_gauge(registry: CollectorRegistry, name: str, doc: str, labels: Sequence[str]) -> Family:
    """A gauge under one of sluiceway's own names (not upstream's processor prefix)."""
    return Family(Gauge(name, doc, list(labels), registry=registry))


def _gate_values(labels: Mapping[str, str]) -> list[str]:
    """A gate series' label values: its owner's labels plus ``inference_pool``."""
    return [labels.get(name, "") for name in (*PROCESSOR_LABELS, "inference_pool")]


def _histogram(
    registry: CollectorRegistry, name: str, doc: str, buckets: Sequence[float]
) -> TallyHistogram:
    name = processor_metric(name)
    return TallyHistogram(name, doc, PROCESSOR_LABELS, buckets=buckets, registry=registry)


class ProximitySnapshot(Collector):
    """``deadline_proximity_millis``: a histogram rebuilt from each backlog poll (not
    monotonic). ``le="0"`` counts entries already past their deadline; ``_sum`` is estimated
    from bucket midpoints."""

    def __init__(self) -> None:
        self._snapshots: dict[tuple[str, str, str], tuple[list[int], int]] = {}

    def update(self, labels: QueueLabels, counts: list[int], total: int) -> None:
        """``counts[i]`` = entries due within ``PROXIMITY_BUCKETS[i]`` seconds; ``total`` all."""
        self._snapshots[labels.values()] = (list(counts), total)

    def collect(self) -> list[HistogramMetricFamily]:
        family = HistogramMetricFamily(
            processor_metric("deadline_proximity_millis"),
            "Pending entries by time left to their deadline (snapshot, ms).",
            labels=list(PROCESSOR_LABELS),
        )
        for values, (counts, total) in self._snapshots.items():
            buckets = [
                (go_float(b * 1000), float(c))
                for b, c in zip(PROXIMITY_BUCKETS, counts, strict=True)
            ]
            buckets.append(("+Inf", float(total)))
            family.add_metric(list(values), buckets, _midpoint_sum(counts, total))
        return [family]


def _midpoint_sum(counts: list[int], total: int) -> float:
    estimate, previous_bound, previous_count = 0.0, 0.0, 0
    for bound, count in zip(PROXIMITY_BUCKETS, counts, strict=True):
        estimate += (count - previous_count) * (previous_bound + bound) / 2 * 1000
        previous_bound, previous_count = bound, count
    return estimate + (total - previous_count) * previous_bound * 1000


class _QueueSeries:
    """The series one queue's hot-path events touch, looked up once. The two gauges a
    request moves up and down (buffered, in flight) are plain counts read at scrape time; the
    counters and histograms are tallies (plain numbers, no lock: one event-loop thread writes
    them, a scrape reads numbers)."""

    def __init__(self, metrics: ProcessorMetrics, values: tuple[str, str, str]) -> None:
        self.buffered = self.in_flight = 0
        metrics.queue_depth.labels(*values).set_function(lambda: self.buffered)
        metrics.inflight.labels(*values).set_function(lambda: self.in_flight)
        self.budget = metrics.budget.labels(*values)
        self.residence = metrics.residence.labels(*values)
        self.latency = metrics.inference_latency.labels(*values)
        self.requests = metrics.requests.labels(*values)
        self.dispatched = metrics.dispatched.labels(*values)
        self.tokens_in = metrics.tokens.labels(*values, "input")
        self.tokens_out = metrics.tokens.labels(*values, "output")
        self.outcomes = {name: family.labels(*values) for name, family in metrics.outcome_families}


class ProcessorMetrics:
    """Every processor collector, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r, q = self.registry, PROCESSOR_LABELS
        self.requests = _counter(r, "request_total", "First attempts of requests.")
        self.retries = _counter(r, "request_retries_total", "Retries scheduled.")
        self.successes = _counter(r, "successful_requests_total", "Requests answered < 400.")
        self.failures = _counter(r, "failed_requests_total", "Requests failed for good.")
        self.shed = _counter(r, "shedded_requests_total", "429 answers received.")
        self.exceeded = _counter(
            r, "exceeded_deadline_requests_total", "Requests ended by their deadline."
        )
        self.dispatched = _counter(r, "dispatched_requests_total", "Upstream attempts sent.")
        self.tokens = _counter(r, "tokens_total", "Tokens from usage.", ["direction"])
        self.gate_decisions = _counter(
            r, "gate_decisions_total", "Gate decisions that held a request.", ["reason"]
        )
        self.gate_wait_requeues = _counter(
            r, "gate_wait_requeues_total", "Parked requests returned after the gate wait."
        )
        self.invalid = _counter(r, "invalid_entries_total", "Entries moved to <queue>:invalid.")
        self.faults = _counter(
            r, "entry_faults_total", "Unexpected failures of a poll or a request.", ["stage"]
        )
        self.infeasible_total = _counter(
            r, "infeasible_requests_total", "Requests answered at once: too little time left."
        )
        self.service_time = _gauge(
            r, "service_time_estimate_seconds", "Dispatch to answer, as estimated.", q
        )
        self.inference_latency = _histogram(
            r, "inference_latency_time_millis", "Upstream attempt latency (ms).", _LATENCY_BUCKETS
        )
        self.residence = _histogram(
            r, "queue_residence_time_millis", "Ingest to worker pickup (ms).", _RESIDENCE_BUCKETS
        )
        self.message_latency = _histogram(
            r, "message_latency_time_millis", "Publish to success (ms; Pub/Sub).", _MESSAGE_BUCKETS
        )
        self.queue_depth = _gauge(r, "queue_depth", "Buffered, awaiting a worker.", q)
        self.inflight = _gauge(r, "inflight_requests", "Dispatched, awaiting an answer.", q)
        self.backlog = _gauge(r, "broker_backlog", "Pending entries in the broker.", q)
        self.backlog_available = _gauge(
            r, "broker_backlog_source_available", "1 when the backlog could be read.", q
        )
        self.worker_limit = _gauge(r, "pool_worker_limit", "Configured workers.", ["pool_name"])
        self.budget = _gauge(r, "dispatch_budget", "Last gate budget.", q)
        signal = [*q, "inference_pool"]
        self.gate_metric_value = _gauge(r, "gate_metric_value", "Last value a gate read.", signal)
        self.gate_metric_threshold = _gauge(
            r, "gate_metric_threshold", "A metric gate's threshold.", signal
        )
        self.gate_metric_available = _gauge(
            r, "gate_metric_source_available", "1 when a metric gate can read its signal.", signal
        )
        self.aimd_window = _own_gauge(r, GATE_AIMD_WINDOW, "An aimd gate's window.", signal)
        self.aimd_ssthresh = _own_gauge(
            r, GATE_AIMD_SSTHRESH, "An aimd gate's slow-start threshold.", signal
        )
        self.aimd_in_flight = _own_gauge(
            r, GATE_AIMD_IN_FLIGHT, "Requests in flight through an aimd window.", signal
        )
        self.peek_order = _own_gauge(
            r, PROCESSOR_PEEK_ORDER, "1 for the order a queue is read in.", [*q, "order"]
        )
        self.proximity = ProximitySnapshot()
        r.register(self.proximity)
        self._outcomes = {
            "successful": self.successes,
            "failed": self.failures,
            "exceeded_deadline": self.exceeded,
        }
        self._series: dict[QueueLabels, _QueueSeries] = {}

    @property
    def outcome_families(self) -> list[tuple[str, TallyCounter]]:
        """(outcome counter name, family) pairs, as named by ``Finish.counter``."""
        return list(self._outcomes.items())

    def gate_signal(
        self, labels: Mapping[str, str], *, available: bool, value: float | None, threshold: float
    ) -> None:
        """What a metric gate read (its owner's labels plus ``inference_pool``)."""
        values = _gate_values(labels)
        self.gate_metric_available.labels(*values).set(1.0 if available else 0.0)
        self.gate_metric_threshold.labels(*values).set(threshold)
        if value is not None:
            self.gate_metric_value.labels(*values).set(value)

    def gate_window(
        self,
        labels: Mapping[str, str],
        *,
        window: Callable[[], float],
        ssthresh: Callable[[], float],
        in_flight: Callable[[], float],
    ) -> None:
        """An aimd gate's window, read at scrape time (owner's labels plus ``inference_pool``)."""
        values = _gate_values(labels)
        self.aimd_window.labels(*values).set_function(window)
        self.aimd_ssthresh.labels(*values).set_function(ssthresh)
        self.aimd_in_flight.labels(*values).set_function(in_flight)

    def prepare(self, labels: QueueLabels) -> None:
        """Create the series of a queue at 0 so dashboards see them before traffic."""
        for reason in GATE_DECISION_REASONS:
            self.gate_decisions.labels(*labels.values(), reason)
        for counter in (self.requests, self.retries, self.successes, self.failures, self.shed):
            counter.labels(*labels.values())
        for gauge in (self.queue_depth, self.inflight):
            gauge.labels(*labels.values()).set(0)
        self.order_used(labels, EARLIEST_DEADLINE)

    def order_used(self, labels: QueueLabels, order: PeekOrder) -> None:
        """A queue's ingest reads in ``order`` from now on (1 for it, 0 for the other)."""
        for each in PeekOrder:
            self.peek_order.labels(*labels.values(), each.value).set(float(each is order))

    def infeasible(self, labels: QueueLabels) -> None:
        self.infeasible_total.labels(*labels.values()).inc()

    def service_time_estimated(self, labels: QueueLabels, seconds: float) -> None:
        self.service_time.labels(*labels.values()).set(seconds)

    def outcome(self, labels: QueueLabels, counter: str) -> None:
        """Bump the outcome counter named by :class:`~sluiceway.processor.outcome.Finish`."""
        self._of(labels).outcomes[counter].inc()

    # -- events of a request's path (the steps call these; label handling stays here) -----

    def _of(self, labels: QueueLabels) -> _QueueSeries:
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = _QueueSeries(self, labels.values())
        return series

    def pool_configured(self, pool_id: str, workers: int) -> None:
        self.worker_limit.labels(pool_id).set(workers)

    def budget_read(self, labels: QueueLabels, budget: float) -> None:
        """A gate's budget was read (queue labels, or :meth:`QueueLabels.of_pool`)."""
        self._of(labels).budget.set(budget)

    def gate_held(self, labels: QueueLabels, reason: str) -> None:
        """A gate held, dropped or failed to decide a request; ``reason`` per ``gate_reason``."""
        self.gate_decisions.labels(*labels.values(), reason).inc()

    def entry_quarantined(self, labels: QueueLabels) -> None:
        self.invalid.labels(*labels.values()).inc()

    def fault(self, labels: QueueLabels, stage: str) -> None:
        """An unexpected failure of a queue's poll (``ingest``) or a request (``worker``)."""
        self.faults.labels(*labels.values(), stage).inc()

    def buffered(self, labels: QueueLabels) -> None:
        """A claimed request entered its pool's ready buffer."""
        self._of(labels).buffered += 1

    def unbuffered(self, labels: QueueLabels) -> None:
        """A buffered request left without a worker (drain, hot reload)."""
        self._of(labels).buffered -= 1

    def picked_up(self, labels: QueueLabels, *, waited_ms: float, first: bool) -> None:
        """A worker took a request from the buffer after ``waited_ms``; ``first``: its first
        attempt (counted once in ``request_total``)."""
        series = self._of(labels)
        series.buffered -= 1
        series.residence.observe(waited_ms)
        if first:
            series.requests.inc()

    def gate_wait_expired(self, labels: QueueLabels) -> None:
        """A parked request went back to its queue after ``gate_wait_timeout``."""
        self.gate_wait_requeues.labels(*labels.values()).inc()

    def attempt_started(self, labels: QueueLabels) -> None:
        series = self._of(labels)
        series.in_flight += 1
        series.dispatched.inc()

    def attempt_ended(self, labels: QueueLabels, *, elapsed_ms: float) -> None:
        series = self._of(labels)
        series.in_flight -= 1
        series.latency.observe(elapsed_ms)

    def answered(self, labels: QueueLabels, status: int, tokens: tuple[int, int] | None) -> None:
        """An HTTP answer arrived: 429s count as shed; ``tokens`` (input, output) from usage."""
        if status == 429:
            self.shed.labels(*labels.values()).inc()
        if tokens is not None:
            series = self._of(labels)
            series.tokens_in.inc(tokens[0])
            series.tokens_out.inc(tokens[1])

    def retried(self, labels: QueueLabels) -> None:
        self.retries.labels(*labels.values()).inc()

    def backlog_read(self, labels: QueueLabels, depth: int, due_counts: list[int]) -> None:
        """A backlog poll read ``depth`` pending entries, ``due_counts`` per proximity bucket."""
        values = labels.values()
        self.backlog.labels(*values).set(depth)
        self.backlog_available.labels(*values).set(1)
        self.proximity.update(labels, due_counts, depth)

    def backlog_unavailable(self, labels: QueueLabels) -> None:
        values = labels.values()
        self.backlog.labels(*values).set(0)
        self.backlog_available.labels(*values).set(0)
