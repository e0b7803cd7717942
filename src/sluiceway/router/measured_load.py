"""Endpoint load measured on the model servers, the router's own counts filling the gaps (pure).

A reading of an endpoint's ``/metrics`` (vLLM's running and waiting requests, KV-cache use)
describes the server when it arrived. Until the next one, the router's own count fills the gap:
requests it dispatched to the endpoint since then are there too, those that ended since are
not. The change of its in-flight count since the reading is exactly that, so

    requests = inflight now + max(0, running + waiting - inflight when the reading arrived)

the router's own requests, always current, plus those the reading found beyond them (other
clients' requests, or ones the server is still aborting). A cycle sees a dispatch at once,
never only after the next scrape, and a request the reading already holds is not counted twice.
A request the server has not received yet when it writes the page still counts (the router's
own count is the floor).

A failed scrape drops the endpoint's reading at once, and a reading counts for ``max_age``
seconds at most (a page that hangs). Then, and for an endpoint not read yet or whose page has no
vLLM series, the load is the router's own count (:class:`~sluiceway.router.load.InFlightLoad`),
stamped now: a stale reading never reads as saturated, dispatch goes on with what the router
itself knows.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import NamedTuple

from sluiceway.flowcontrol.base import SaturationDetector
from sluiceway.flowcontrol.saturation import UtilizationDetector
from sluiceway.observability import names
from sluiceway.router.load import EndpointLoad, InFlightLoad
from sluiceway.signals.base import Sample
from sluiceway.signals.scrape import parse_metrics, select

__all__ = [
    "EndpointReport",
    "MeasuredLoad",
    "Status",
    "VllmReading",
    "read_vllm",
    "reading_lifetime",
]

_SERIES = (
    names.VLLM_NUM_REQUESTS_RUNNING,
    names.VLLM_NUM_REQUESTS_WAITING,
    names.VLLM_KV_CACHE_USAGE_PERC,
)
_OWN = InFlightLoad()


@dataclass(frozen=True, slots=True)
class VllmReading:
    """One page's request counts (summed over engines) and KV use (the fullest engine; 0 when
    the page has none)."""

    running: int
    waiting: int
    kv_usage: float


def _finite(samples: list[Sample], metric: str) -> list[float]:
    return [s.value for s in select(samples, metric) if math.isfinite(s.value)]


def read_vllm(text: str) -> VllmReading | None:
    """What a ``/metrics`` page says, or None when it has no vLLM request series."""
    samples = parse_metrics(text, only=_SERIES)
    running = _finite(samples, names.VLLM_NUM_REQUESTS_RUNNING)
    waiting = _finite(samples, names.VLLM_NUM_REQUESTS_WAITING)
    if not running and not waiting:
        return None
    kv = _finite(samples, names.VLLM_KV_CACHE_USAGE_PERC)
    return VllmReading(int(sum(running)), int(sum(waiting)), max(kv, default=0.0))


def reading_lifetime(interval: float, detector: SaturationDetector | None) -> float:
    """How long a reading counts: two intervals (the next one is due after one), never longer
    than the utilization detector's staleness threshold, so that detector is never handed a
    reading it would score as saturated."""
    lifetime = 2 * interval
    if isinstance(detector, UtilizationDetector):
        return min(lifetime, detector.staleness)
    return lifetime


class Status(enum.Enum):
    """What the last scrape of an endpoint found."""

    MEASURED = "measured"
    NOT_VLLM = "not-vllm"
    UNREADABLE = "unreadable"


class EndpointReport(NamedTuple):
    """For the router's metrics: scrapes that failed, and the age of the reading in use
    (``inf`` when there is none)."""

    url: str
    failures: int
    age: float


@dataclass(slots=True)
class _Endpoint:
    status: Status | None = None
    reading: VllmReading | None = None
    at: float = 0.0
    inflight_at: int = 0  # the router's in-flight count when the reading arrived
    failures: int = 0


class MeasuredLoad:
    """A :class:`~sluiceway.router.load.LoadSource` over the last reading of each endpoint."""

    def __init__(self, max_age: float) -> None:
        if max_age <= 0:
            raise ValueError("max_age must be > 0")
        self.max_age = max_age
        self._endpoints: dict[str, _Endpoint] = {}

    def landed(
        self, url: str, reading: VllmReading | None, inflight: int, now: float
    ) -> Status | None:
        """A page of ``url`` arrived (``reading`` None: it has no vLLM series) while the router
        had ``inflight`` requests there. Returns the new status when it changed."""
        e = self._endpoints.setdefault(url, _Endpoint())
        e.reading, e.at, e.inflight_at = reading, now, inflight
        return self._set(e, Status.NOT_VLLM if reading is None else Status.MEASURED)

    def failed(self, url: str) -> Status | None:
        """The page of ``url`` could not be read: its reading is dropped. Returns the new
        status when it changed."""
        e = self._endpoints.setdefault(url, _Endpoint())
        e.failures += 1
        e.reading = None
        return self._set(e, Status.UNREADABLE)

    def keep_only(self, urls: Collection[str]) -> None:
        """Forget endpoints that left the pool."""
        for url in [u for u in self._endpoints if u not in urls]:
            del self._endpoints[url]

    def load(self, url: str, inflight: int, now: float) -> EndpointLoad:
        e = self._endpoints.get(url)
        reading = None if e is None else e.reading
        if e is None or reading is None or now - e.at > self.max_age:
            return _OWN.load(url, inflight, now)
        beyond = max(0, reading.running + reading.waiting - e.inflight_at)
        return EndpointLoad(reading.waiting, reading.kv_usage, e.at, inflight + beyond)

    def age(self, url: str, now: float) -> float:
        """Seconds since the reading of ``url`` in use arrived (``inf``: none in use)."""
        e = self._endpoints.get(url)
        if e is None or e.reading is None or now - e.at > self.max_age:
            return math.inf
        return max(0.0, now - e.at)

    def report(self, now: float) -> list[EndpointReport]:
        return [EndpointReport(u, e.failures, self.age(u, now)) for u, e in self._endpoints.items()]

    @staticmethod
    def _set(e: _Endpoint, status: Status) -> Status | None:
        changed = e.status is not status
        e.status = status
        return status if changed else None
