"""Every processor metric upstream exports is exported under its exact name."""

from __future__ import annotations

from prometheus_client import generate_latest

from sluiceway.observability.names import PROCESSOR_METRICS, processor_metric
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
