"""The Batch API's metrics (names in ``observability.names``), shown on the coordinator's (or
the router's) ``/metrics``.

- ``sluiceway_coordinator_batches_running{status}``: batches this replica runs, by status;
- ``sluiceway_coordinator_batches_finished_total{status}``: batches ended, by final status;
- ``sluiceway_coordinator_batch_lines_total{outcome}``: lines written, by outcome
  (``completed``, ``failed``, ``expired``, ``cancelled``);
- ``sluiceway_coordinator_batch_duration_seconds``: creation to final status (scaled seconds).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from sluiceway.batch.status import TERMINAL, BatchStatus
from sluiceway.observability import names

__all__ = ["BatchMetrics"]

# 1 minute to the 24 h window
_DURATION_BUCKETS: Final = (60, 300, 900, 1800, 3600, 7200, 14400, 28800, 57600, 86400)


class BatchMetrics:
    """Counters the runners move; :meth:`register` shows them on a registry."""

    def __init__(self) -> None:
        self.running = Gauge(
            names.COORDINATOR_BATCHES_RUNNING,
            "Batches this coordinator runs, by status",
            ["status"],
            registry=None,
        )
        self.finished = Counter(
            names.COORDINATOR_BATCHES_FINISHED_TOTAL.removesuffix("_total"),
            "Batches that reached a final status, by status",
            ["status"],
            registry=None,
        )
        self.lines = Counter(
            names.COORDINATOR_BATCH_LINES_TOTAL.removesuffix("_total"),
            "Batch lines written to the output or error file, by outcome",
            ["outcome"],
            registry=None,
        )
        self.duration = Histogram(
            names.COORDINATOR_BATCH_DURATION_SECONDS,
            "Time from a batch's creation to its final status (scaled seconds)",
            buckets=_DURATION_BUCKETS,
            registry=None,
        )

    def register(self, registry: CollectorRegistry) -> None:
        for metric in (self.running, self.finished, self.lines, self.duration):
            registry.register(metric)

    def moved(self, before: BatchStatus | None, after: BatchStatus, *, age: float) -> None:
        """A batch moved from ``before`` (None: a runner took it up) to ``after``."""
        if before is not None and before not in TERMINAL:
            self.running.labels(str(before)).dec()
        if after in TERMINAL:
            self.finished.labels(str(after)).inc()
            self.duration.observe(age)
        else:
            self.running.labels(str(after)).inc()

    def stopped(self, status: BatchStatus) -> None:
        """A runner stopped before its batch ended (shutdown, lease lost)."""
        if status not in TERMINAL:
            self.running.labels(str(status)).dec()

    def written(self, outcomes: Iterable[str]) -> None:
        for outcome in outcomes:
            self.lines.labels(outcome).inc()
