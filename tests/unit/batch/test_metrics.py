"""Batch metrics: running batches by status, finished ones, lines by outcome, durations."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from sluiceway.batch.metrics import BatchMetrics
from sluiceway.batch.status import BatchStatus

S = BatchStatus


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    found = registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def test_a_batch_is_counted_where_it_is() -> None:
    registry = CollectorRegistry()
    metrics = BatchMetrics()
    metrics.register(registry)
    metrics.moved(None, S.VALIDATING, age=0)
    metrics.moved(S.VALIDATING, S.IN_PROGRESS, age=1)
    running = "sluiceway_coordinator_batches_running"
    assert value(registry, running, status="in_progress") == 1
    assert value(registry, running, status="validating") == 0
    metrics.written(["completed", "completed", "expired"])
    metrics.moved(S.IN_PROGRESS, S.EXPIRED, age=90)
    assert value(registry, running, status="in_progress") == 0
    finished = "sluiceway_coordinator_batches_finished_total"
    assert value(registry, finished, status="expired") == 1
    lines = "sluiceway_coordinator_batch_lines_total"
    assert value(registry, lines, outcome="completed") == 2
    assert value(registry, lines, outcome="expired") == 1
    assert value(registry, "sluiceway_coordinator_batch_duration_seconds_sum") == 90


def test_a_runner_that_stops_early_leaves_the_gauge() -> None:
    registry = CollectorRegistry()
    metrics = BatchMetrics()
    metrics.register(registry)
    metrics.moved(None, S.IN_PROGRESS, age=0)
    metrics.stopped(S.IN_PROGRESS)
    metrics.stopped(S.COMPLETED)  # already counted as finished: nothing to undo
    running = "sluiceway_coordinator_batches_running"
    assert value(registry, running, status="in_progress") == 0
