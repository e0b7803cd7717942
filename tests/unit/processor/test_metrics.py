"""Every processor metric upstream exports is exported under its exact name, and the counters
and histograms (tallies) export what prometheus_client's own objects would."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from sluiceway.observability.names import PROCESSOR_METRICS, processor_metric
from sluiceway.processor import metrics as processor_metrics
from sluiceway.processor.metrics import ProcessorMetrics, QueueLabels

# Defined by the metric gates (their own issue), not by the processor core.
GATE_SIGNAL_METRICS = {"gate_metric_value", "gate_metric_threshold", "gate_metric_source_available"}


def test_every_processor_metric_is_exported() -> None:
    metrics = ProcessorMetrics()
    labels = QueueLabels("q", "q", "default")
    metrics.prepare(labels)
    metrics.proximity.update(labels, [0] * 14, 0)
    for collector in (metrics.inference_latency, metrics.residence, metrics.message_latency):
        collector.labels(*labels.values()).observe(1)
    metrics.tokens.labels(*labels.values(), "input").inc()
    for gauge in (metrics.backlog, metrics.backlog_available, metrics.budget):
        gauge.labels(*labels.values()).set(1)
    for counter in (
        metrics.exceeded,
        metrics.dispatched,
        metrics.gate_wait_requeues,
        metrics.invalid,
    ):
        counter.labels(*labels.values()).inc()
    metrics.worker_limit.labels("default").set(4)
    text = generate_latest(metrics.registry).decode()
    for name in set(PROCESSOR_METRICS) - GATE_SIGNAL_METRICS:
        assert f"# TYPE {processor_metric(name)} " in text, name


def test_gate_decision_reasons_start_at_zero() -> None:
    metrics = ProcessorMetrics()
    metrics.prepare(QueueLabels("q", "q", "p"))
    for reason in ("gate_closed", "quota_exhausted", "dropped", "error"):
        value = metrics.registry.get_sample_value(
            "llm_d_async_async_gate_decisions_total",
            {"queue_id": "q", "queue_name": "q", "pool_name": "p", "reason": reason},
        )
        assert value == 0.0


def test_deadline_proximity_is_a_histogram_snapshot() -> None:
    metrics = ProcessorMetrics()
    labels = QueueLabels("q", "q", "p")
    metrics.proximity.update(labels, [1, 1, 2, *([3] * 11)], 4)
    get = metrics.registry.get_sample_value
    name = "llm_d_async_async_deadline_proximity_millis"
    base = {"queue_id": "q", "queue_name": "q", "pool_name": "p"}
    assert get(f"{name}_bucket", {**base, "le": "0.0"}) == 1
    assert get(f"{name}_bucket", {**base, "le": "5000.0"}) == 2
    assert get(f"{name}_bucket", {**base, "le": "+Inf"}) == 4
    assert get(f"{name}_count", base) == 4
    metrics.proximity.update(labels, [0] * 14, 0)
    assert get(f"{name}_count", base) == 0


def test_events_of_a_request_move_their_series() -> None:
    metrics = ProcessorMetrics()
    labels = QueueLabels("q", "q", "p")
    metrics.prepare(labels)
    metrics.buffered(labels)
    metrics.picked_up(labels, waited_ms=5, first=True)
    metrics.attempt_started(labels)
    metrics.answered(labels, 429, None)
    metrics.attempt_ended(labels, elapsed_ms=3)
    metrics.retried(labels)
    metrics.gate_held(QueueLabels.of_pool("p"), "quota_exhausted")
    registry = metrics.registry
    values = {"queue_id": "q", "queue_name": "q", "pool_name": "p"}

    def sample(name: str, extra: dict[str, str] | None = None) -> float | None:
        return registry.get_sample_value(processor_metric(name), {**values, **(extra or {})})

    assert sample("queue_depth") == 0 and sample("inflight_requests") == 0
    assert sample("request_total") == sample("dispatched_requests_total") == 1
    assert sample("shedded_requests_total") == sample("request_retries_total") == 1
    pool = {"queue_id": "", "queue_name": "", "pool_name": "p", "reason": "quota_exhausted"}
    assert registry.get_sample_value(processor_metric("gate_decisions_total"), pool) == 1


def test_buffered_and_in_flight_gauges_follow_the_request() -> None:
    metrics = ProcessorMetrics()
    labels = QueueLabels("q", "q", "p")
    metrics.prepare(labels)
    values = {"queue_id": "q", "queue_name": "q", "pool_name": "p"}

    def gauges() -> tuple[float | None, float | None]:
        get = metrics.registry.get_sample_value
        return get(processor_metric("queue_depth"), values), get(
            processor_metric("inflight_requests"), values
        )

    metrics.buffered(labels)
    metrics.buffered(labels)
    assert gauges() == (2.0, 0.0)
    metrics.picked_up(labels, waited_ms=1, first=True)
    metrics.attempt_started(labels)
    assert gauges() == (1.0, 1.0)
    metrics.unbuffered(labels)
    metrics.attempt_ended(labels, elapsed_ms=2)
    assert gauges() == (0.0, 0.0)
    text = generate_latest(metrics.registry).decode()
    assert 'llm_d_async_async_queue_depth{pool_name="p",queue_id="q",queue_name="q"} 0.0' in text


class _PlainCounter:
    """prometheus_client's own Counter behind the tally's constructor: the reference."""

    def __init__(
        self, name: str, doc: str, labelnames: Sequence[str], *, registry: CollectorRegistry
    ) -> None:
        self._metric = Counter(name, doc, list(labelnames), registry=registry)

    def labels(self, *values: str) -> Counter:
        return self._metric.labels(*values)


class _PlainHistogram:
    """prometheus_client's own Histogram behind the tally's constructor: the reference."""

    def __init__(
        self,
        name: str,
        doc: str,
        labelnames: Sequence[str],
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self._metric = Histogram(name, doc, list(labelnames), buckets=buckets, registry=registry)

    def labels(self, *values: str) -> Histogram:
        return self._metric.labels(*values)


def _traffic(metrics: ProcessorMetrics, clock: list[float]) -> None:
    """Two queues and a pool, every event method, series created at distinct wall times."""
    a, b = QueueLabels("a", "team-a", "p"), QueueLabels("b", "b", "p")
    pool = QueueLabels.of_pool("p")
    metrics.pool_configured("p", 4)
    metrics.prepare(b)
    clock[0] += 1.5
    metrics.prepare(a)
    waits = (0.1, 500, 500.0000001, 1e9, 0, 3e4, 0.3)
    for step, (labels, waited) in enumerate(zip(itertools.cycle((a, b)), waits, strict=False)):
        clock[0] += 0.25
        metrics.buffered(labels)
        metrics.picked_up(labels, waited_ms=waited, first=step % 3 != 1)
        metrics.attempt_started(labels)
        metrics.attempt_ended(labels, elapsed_ms=waited / 7)
        metrics.answered(labels, 429 if step == 3 else 200, None if step == 2 else (step * 11, 3))
        metrics.outcome(labels, ("successful", "failed", "exceeded_deadline")[step % 3])
        if step == 4:
            metrics.retried(labels)
    metrics.gate_held(pool, "quota_exhausted")
    metrics.gate_held(a, "dropped")
    metrics.budget_read(pool, 3)
    metrics.entry_quarantined(b)
    metrics.gate_wait_expired(a)
    metrics.message_latency.labels(*a.values()).observe(1234)
    metrics.backlog_read(a, 5, [1, 2, *([3] * 12)])


@pytest.mark.parametrize("exposition", ["text", "openmetrics"])
@pytest.mark.parametrize("created", [True, False], ids=["created", "no-created"])
def test_the_registry_exposes_what_prometheus_client_objects_would(
    monkeypatch: pytest.MonkeyPatch, exposition: str, created: bool
) -> None:
    """Same events through the tallies and through prometheus_client Counter / Histogram
    objects of the same names, labels and buckets: the same bytes, `_created` stamps too."""
    clock = [1_700_000_000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    monkeypatch.setattr(prometheus_metrics, "_use_created", created)
    render = generate_latest if exposition == "text" else openmetrics_latest
    _traffic(tallied := ProcessorMetrics(), clock)
    with monkeypatch.context() as plain:
        plain.setattr(processor_metrics, "TallyCounter", _PlainCounter)
        plain.setattr(processor_metrics, "TallyHistogram", _PlainHistogram)
        clock[0] = 1_700_000_000.0
        _traffic(reference := ProcessorMetrics(), clock)
    assert isinstance(reference.requests, _PlainCounter)
    expected = render(reference.registry)
    assert render(tallied.registry) == expected
    assert (b"llm_d_async_async_request_created{" in expected) is created


def test_created_stamps_are_present_and_plausible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_metrics, "_use_created", True)
    before = time.time()
    metrics = ProcessorMetrics()
    labels = QueueLabels("q", "q", "p")
    metrics.prepare(labels)
    metrics.picked_up(labels, waited_ms=1, first=True)
    after = time.time()
    values = {"queue_id": "q", "queue_name": "q", "pool_name": "p"}
    for name in ("request_created", "queue_residence_time_millis_created"):
        stamp = metrics.registry.get_sample_value(f"llm_d_async_async_{name}", values)
        assert stamp is not None and before <= stamp <= after
