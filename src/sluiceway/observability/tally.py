"""Counters and histograms kept in plain Python numbers and exported at scrape time.

prometheus_client's ``Counter.inc`` checks that the metric has its labels and increments under
a threading lock; ``Histogram.observe`` walks its bounds in Python and takes two locks. On a
path that updates several series per request that is a visible share of the CPU. A tally keeps
each series as plain numbers instead: a counter is one float, a histogram one count per bucket
(found with :func:`bisect.bisect_left` on its bounds) and a sum. :meth:`TallyCounter.collect`
and :meth:`TallyHistogram.collect` turn them into the exposition prometheus_client's own
``Counter`` and ``Histogram`` give for the same events, byte for byte: family name, HELP,
TYPE, label names in their order, series in the order they were first looked up, ``_total``,
cumulative ``_bucket`` samples with ``le`` as Go prints it, ``_count``, ``_sum`` and ``_created``
(the wall time a series was first looked up; left out as prometheus_client leaves it out, with
``PROMETHEUS_DISABLE_CREATED_SERIES`` or ``disable_created_metrics()``).

No lock: a tally is written by one thread (an event loop). A scrape from another thread copies
the series table in one C call and reads numbers, each read atomic under the GIL; it may see a
request's updates half done (a histogram's bucket before its sum), as prometheus_client's
per-value locks also allow. Writers on several threads would lose increments: use
prometheus_client there.

``labels(*values)`` returns a series, created on its first lookup (at 0), so callers may keep
it; updates then cost one method call and an addition. Unlike prometheus_client, an observed
NaN lands in the lowest bucket (prometheus_client counts it in none).

Why this exists at all, since it re-implements prometheus_client's text output: a benchmark
showed the gain, and only where it did. The processor's seven updates per request went from
4.9 to 0.76 us (``bench processor_instructions``: part of halving its CPU above the durable
floor, 0.741 -> 0.338 million instructions per request), so the processor's counters and
histograms are tallies (``processor/metrics.py``). Everywhere else prometheus_client's own
objects stay; a new user of this module brings its own side-by-side benchmark figure.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar, cast

from prometheus_client import CollectorRegistry
from prometheus_client import metrics as prometheus_metrics
from prometheus_client import utils as prometheus_utils
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

__all__ = ["CounterSeries", "HistogramSeries", "TallyCounter", "TallyHistogram", "go_float"]

_INF = float("inf")


def go_float(value: float) -> str:
    """A number as Prometheus clients print it (``0.0``, ``1000.0``, ``1.8e+06``, ``+Inf``)."""
    return cast(Callable[[float], str], prometheus_utils.floatToGoString)(value)


def _created_enabled() -> bool:
    """prometheus_client's own switch, read at each scrape as its metrics read it."""
    return bool(getattr(prometheus_metrics, "_use_created", True))


class CounterSeries:
    """One counter series: ``value`` and ``created`` (wall seconds)."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount


class HistogramSeries:
    """One histogram series: ``counts[i]`` observations at most ``bounds[i]`` (and above the
    one before), the last past every finite bound; ``sum``; ``created`` (wall seconds)."""

    __slots__ = ("_bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self._bounds, value)] += 1
        self.sum += value


S = TypeVar("S", CounterSeries, HistogramSeries)


class _Tally(Collector, Generic[S]):
    """A metric family that owns its series, registered in ``registry`` when given."""

    _type = ""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Iterable[str],
        registry: CollectorRegistry | None,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._series: dict[tuple[str, ...], S] = {}
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> S:
        """The series of ``values`` (one per label name, in order), created at 0 when new."""
        series = self._series.get(values)
        if series is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name}: {len(self.labelnames)} label values expected")
            series = self._series[values] = self._new()
        return series

    @abstractmethod
    def _new(self) -> S: ...

    @abstractmethod
    def _add_samples(
        self, metric: Metric, labels: dict[str, str], series: S, created: bool
    ) -> None: ...

    def describe(self) -> list[Metric]:
        """The family without samples (the registry learns its sample names from it)."""
        return [Metric(self.name, self.documentation, self._type)]

    def collect(self) -> list[Metric]:
        metric = Metric(self.name, self.documentation, self._type)
        created = _created_enabled()
        for values, series in self._series.copy().items():
            labels = dict(zip(self.labelnames, values, strict=True))
            self._add_samples(metric, labels, series, created)
        return [metric]


class TallyCounter(_Tally[CounterSeries]):
    """A counter family; ``name`` may end in ``_total`` (the family name drops it, as in
    prometheus_client)."""

    _type = "counter"

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Iterable[str],
        *,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(name.removesuffix("_total"), documentation, labelnames, registry)

    def _new(self) -> CounterSeries:
        return CounterSeries()

    def _add_samples(
        self, metric: Metric, labels: dict[str, str], series: CounterSeries, created: bool
    ) -> None:
        metric.add_sample(self.name + "_total", labels, series.value)
        if created:
            metric.add_sample(self.name + "_created", labels, series.created)


class TallyHistogram(_Tally[HistogramSeries]):
    """A histogram family over sorted ``buckets`` (``+Inf`` is added when missing)."""

    _type = "histogram"

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Iterable[str],
        *,
        buckets: Iterable[float],
        registry: CollectorRegistry | None = None,
    ) -> None:
        upper = [float(bound) for bound in buckets]
        if upper != sorted(upper):
            raise ValueError("Buckets not in sorted order")
        if upper and upper[-1] == _INF:
            upper.pop()
        if not upper:
            raise ValueError("Must have at least two buckets")
        self._bounds = tuple(upper)
        self._le = [*map(go_float, upper), "+Inf"]
        super().__init__(name, documentation, labelnames, registry)

    def _new(self) -> HistogramSeries:
        return HistogramSeries(self._bounds)

    def _add_samples(
        self, metric: Metric, labels: dict[str, str], series: HistogramSeries, created: bool
    ) -> None:
        total = 0.0
        for le, count in zip(self._le, list(series.counts), strict=True):
            total += count
            metric.add_sample(self.name + "_bucket", {**labels, "le": le}, total)
        metric.add_sample(self.name + "_count", labels, total)
        if self._bounds[0] >= 0:
            metric.add_sample(self.name + "_sum", labels, series.sum)
        if created:
            metric.add_sample(self.name + "_created", labels, series.created)
