"""``utilization-detector``: saturation from scraped queue depth and KV-cache usage.

Endpoint score = ``max(waiting / queue_depth_threshold, kv_usage / kv_cache_util_threshold)``;
missing or stale metrics (older than ``staleness`` seconds) score 1.0 (fail closed). Pool
saturation = unweighted mean of endpoint scores; no endpoints -> 1.0.

In-flight credit (docs/design-rules.md rule 21): scrapes lag dispatches, so every dispatch since the
newest scrape adds one waiting request's worth of score (``1 / (queue_depth_threshold x
endpoints)``) until a newer scrape lands. Without it a burst of dispatches would all see the same
stale low value and overshoot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.base import CapacityView, EndpointSnapshot

__all__ = ["UtilizationDetector"]


@dataclass(slots=True)
class UtilizationDetector:
    queue_depth_threshold: float = 5.0
    kv_cache_util_threshold: float = 0.8
    staleness: float = 0.2
    headroom: float = 0.0
    name: str = "utilization-detector"
    stale_endpoints: int = field(default=0, init=False)
    _credit: int = field(default=0, init=False, repr=False)
    _newest: float = field(default=float("-inf"), init=False, repr=False)

    def __post_init__(self) -> None:
        if self.queue_depth_threshold <= 0:
            raise ConfigError("must be > 0", field="queueDepthThreshold")
        if not 0 < self.kv_cache_util_threshold <= 1:
            raise ConfigError("must be in (0, 1]", field="kvCacheUtilThreshold")
        if self.staleness <= 0:
            raise ConfigError("must be > 0", field="metricsStalenessThreshold")
        if self.headroom < 0:
            raise ConfigError("must be >= 0", field="headroom")

    def view(self, endpoints: Sequence[EndpointSnapshot], now: float) -> CapacityView:
        if not endpoints:
            self.stale_endpoints = 0
            return CapacityView(1.0, pool_empty=True)
        self._forget_credit_if_newer(endpoints)
        scores = [self._score(e, now) for e in endpoints]
        self.stale_endpoints = sum(1 for e in endpoints if self._stale(e, now))
        unit = 1.0 / (self.queue_depth_threshold * len(endpoints))
        saturation = sum(scores) / len(scores) + self._credit * unit
        return CapacityView(saturation, request_cost=unit)

    def note_dispatched(self, count: int) -> None:
        self._credit += count

    def keep(self, endpoints: Sequence[EndpointSnapshot], now: float) -> list[EndpointSnapshot]:
        """Scheduling filter: fresh endpoints under both limits x (1 + headroom); fail open."""
        q_cap = self.queue_depth_threshold * (1 + self.headroom)
        kv_cap = self.kv_cache_util_threshold * (1 + self.headroom)
        out = [
            e
            for e in endpoints
            if not self._stale(e, now) and (e.waiting or 0) < q_cap and (e.kv_usage or 0) < kv_cap
        ]
        return out or list(endpoints)

    def _stale(self, e: EndpointSnapshot, now: float) -> bool:
        return e.scraped_at is None or now - e.scraped_at > self.staleness

    def _score(self, e: EndpointSnapshot, now: float) -> float:
        if self._stale(e, now) or e.waiting is None or e.kv_usage is None:
            return 1.0
        return max(
            e.waiting / self.queue_depth_threshold, e.kv_usage / self.kv_cache_util_threshold
        )

    def _forget_credit_if_newer(self, endpoints: Sequence[EndpointSnapshot]) -> None:
        newest = max((e.scraped_at for e in endpoints if e.scraped_at is not None), default=None)
        if newest is not None and newest > self._newest:
            self._newest = newest
            self._credit = 0
