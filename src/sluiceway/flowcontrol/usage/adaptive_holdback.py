"""``adaptive-holdback-policy`` (sluiceway's own): keep headroom for higher bands only while
they have recent demand.

Algorithm. For every band the policy keeps the peak of its occupancy (queued + in-flight
requests) over a sliding window of ``window`` seconds (``buckets`` buckets, so the peak
forgets a burst between ``window - window/buckets`` and ``window`` seconds after it). Walking
the bands from the highest, it reserves for each band with a non-zero peak
``(peak - current occupancy + margin) x unit`` of saturation: the room that band used
recently and is not using now, plus ``margin`` requests for an arrival beyond the peak. A
band's ceiling is ``max_ceiling`` minus everything reserved by the bands above it, clamped to
``[min_ceiling, max_ceiling]``; so ceilings are non-increasing. ``unit`` is the saturation one
request adds (from the detector); with ``unit = 0`` nothing is held back.

Consequences: with no higher-band traffic every ceiling is ``max_ceiling`` (lower bands use the
whole pool); once a higher band shows up, the reserve converges to its peak demand within one
window; when it leaves, the reserve decays to zero one window later. Nothing in flight is ever
cancelled (that is eviction's job).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.base import BandLoad, LimitInput

__all__ = ["AdaptiveHoldback", "WindowPeak"]


class WindowPeak:
    """The maximum of observed values over the last ``buckets`` buckets of ``width`` seconds."""

    __slots__ = ("_buckets", "_n", "_width")

    def __init__(self, window: float, buckets: int) -> None:
        self._width = window / buckets
        self._n = buckets
        self._buckets: deque[list[float]] = deque()  # [bucket index, max]

    def observe(self, now: float, value: float) -> float:
        """Record ``value`` at ``now``; return the peak over the window ending at ``now``."""
        idx = math.floor(now / self._width)
        buckets = self._buckets
        while buckets and buckets[0][0] <= idx - self._n:
            buckets.popleft()
        if buckets and buckets[-1][0] == idx:
            buckets[-1][1] = max(buckets[-1][1], value)
        else:
            buckets.append([float(idx), value])
        return self.peak()

    def peak(self) -> float:
        """The peak as of the last observation (0 before any)."""
        return max((b[1] for b in self._buckets), default=0.0)


@dataclass(slots=True)
class AdaptiveHoldback:
    """``window``: seconds of memory; ``margin``: extra requests reserved per active band."""

    window: float = 30.0
    buckets: int = 6
    margin: float = 1.0
    min_ceiling: float = 0.0
    max_ceiling: float = 1.0
    name: str = "adaptive-holdback-policy"
    _peaks: dict[int, WindowPeak] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ConfigError("must be > 0", field="window")
        if self.buckets < 1:
            raise ConfigError("must be >= 1", field="buckets")
        if self.margin < 0:
            raise ConfigError("must be >= 0", field="margin")
        if not 0.0 <= self.min_ceiling < self.max_ceiling <= 1.0:
            raise ConfigError("need 0 <= minCeiling < maxCeiling <= 1", field="minCeiling")

    def ceilings(self, view: LimitInput) -> Sequence[float]:
        reserve = 0.0
        out: list[float] = []
        for band in view.bands:
            out.append(min(self.max_ceiling, max(self.min_ceiling, self.max_ceiling - reserve)))
            reserve += self._reserve_of(band, view)
        return out

    def demand(self, priority: int) -> float:
        """Peak occupancy (requests) of a band over the last window, as last computed."""
        peak = self._peaks.get(priority)
        return 0.0 if peak is None else peak.peak()

    def _reserve_of(self, band: BandLoad, view: LimitInput) -> float:
        occupancy = float(band.queued + band.inflight)
        peak = self._peaks.get(band.priority)
        if peak is None:
            peak = self._peaks[band.priority] = WindowPeak(self.window, self.buckets)
        top = peak.observe(view.now, occupancy)
        if top <= 0:
            return 0.0
        return (top - occupancy + self.margin) * view.unit
