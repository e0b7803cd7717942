"""The coordinator's own metrics (names defined in ``observability.names``)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sluiceway.clock import Clock
from sluiceway.coordinator.patience import PatienceBook
from sluiceway.observability import names

__all__ = ["CoordinatorMetrics"]


class CoordinatorMetrics:
    """Answers by mode and status class, connections held in wait mode, and each tenant's
    learned patience (read at scrape time)."""

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

    def watch_patience(self, book: PatienceBook, clock: Clock) -> None:
        self.registry.register(_PatienceCollector(book, clock))


class _PatienceCollector(Collector):
    def __init__(self, book: PatienceBook, clock: Clock) -> None:
        self._book = book
        self._clock = clock

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            names.COORDINATOR_LEARNED_PATIENCE,
            "Each tenant's learned wait-mode patience (absent while too little is known)",
            labels=["tenant"],
        )
        now = self._clock.now()
        for tenant in self._book.tenants():
            learned = self._book.learned(tenant, now)
            if learned is not None:
                family.add_metric([tenant], learned)
        yield family
