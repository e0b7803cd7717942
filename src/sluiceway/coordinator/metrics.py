"""The coordinator's own metrics (names defined in ``observability.names``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from sluiceway.observability import names

__all__ = ["CoordinatorMetrics"]


class CoordinatorMetrics:
    """Answers by mode and status class, and connections held in wait mode."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._answers = Counter(
            names.COORDINATOR_REQUESTS_TOTAL.removesuffix("_total"),
            "Requests answered, by mode and HTTP status",
            ["mode", "status"],
            registry=self.registry,
        )
        self.waiting = Gauge(
            names.COORDINATOR_HELD_CONNECTIONS,
            "Wait-mode connections held open right now",
            registry=self.registry,
        )

    def answered(self, mode: str, status: int) -> None:
        self._answers.labels(mode, str(status)).inc()
