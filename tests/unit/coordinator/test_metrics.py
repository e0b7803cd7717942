"""The coordinator's own metrics: answers counted by mode and status, wait-mode connections
held, each coordinator in its own registry under the names ``observability.names`` defines."""

from __future__ import annotations

from sluiceway.coordinator.metrics import CoordinatorMetrics
from sluiceway.observability import names


def _answers(metrics: CoordinatorMetrics, mode: str, status: str) -> float | None:
    labels = {"mode": mode, "status": status}
    return metrics.registry.get_sample_value(names.COORDINATOR_REQUESTS_TOTAL, labels)


def test_answers_are_counted_by_mode_and_status() -> None:
    metrics = CoordinatorMetrics()
    for mode, status in [("wait", 200), ("wait", 200), ("wait", 504), ("passthrough", 429)]:
        metrics.answered(mode, status)
    assert _answers(metrics, "wait", "200") == 2
    assert _answers(metrics, "wait", "504") == 1
    assert _answers(metrics, "passthrough", "429") == 1
    assert _answers(metrics, "enqueue", "202") is None


def test_held_connections_go_up_and_down() -> None:
    metrics = CoordinatorMetrics()
    metrics.waiting.inc()
    metrics.waiting.inc()
    metrics.waiting.dec()
    assert metrics.registry.get_sample_value(names.COORDINATOR_HELD_CONNECTIONS) == 1


def test_each_coordinator_counts_in_its_own_registry() -> None:
    first, second = CoordinatorMetrics(), CoordinatorMetrics()
    first.answered("enqueue", 202)
    assert _answers(first, "enqueue", "202") == 1
    assert _answers(second, "enqueue", "202") is None
