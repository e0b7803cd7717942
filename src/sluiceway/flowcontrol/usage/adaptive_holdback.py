"""``adaptive-holdback-policy`` (sluiceway's own): keep headroom for higher bands only while
they have recent demand, sized from that demand.

Algorithm. For every band the policy measures its demand ``D``: the time-averaged occupancy
(queued + in-flight requests) over a sliding window of ``window`` seconds, kept in ``buckets``
buckets (Little's law: ``D`` = arrival rate x time in system). A band with ``D > 0`` is given a
headroom target ``H = D + safety x sqrt(D) + margin`` requests: the mean, a Poisson-style
safety term for bursts, and ``margin`` requests for the next arrival. Walking the bands from the
highest, each band reserves ``ceil(H - current occupancy) x unit`` of saturation (never below
0): the part of its headroom it is not using right now, in whole requests. A band's ceiling is
``max_ceiling`` minus everything reserved by the bands above it, clamped to
``[min_ceiling, max_ceiling]``; so ceilings are non-increasing. ``unit`` is the saturation one
request adds (from the detector); with ``unit = 0`` nothing is held back.

Consequences: with no higher-band traffic every ceiling is ``max_ceiling`` (lower bands use the
whole pool); when a higher band shows up, ``H`` converges to its demand within one window (the
window then holds only samples of the new regime); when it leaves, ``H`` decays and is gone one
window later. A lower band can hold at most ``C - H`` slots, so a higher-band arrival finds a
free slot unless the band's own occupancy exceeds ``H``; if it does, strict priority gives it
the next slot that frees. Nothing in flight is ever cancelled (that is eviction's job).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.base import BandLoad, LimitInput

__all__ = ["AdaptiveHoldback", "WindowMean"]

_EPS = 1e-9


class WindowMean:
    """Time average of a piecewise-constant signal over the last ``window`` seconds.

    Each observation holds its value until the next one; buckets of ``window / buckets``
    seconds keep (integral, covered time), so old history leaves in bucket-sized steps.
    """

    __slots__ = ("_buckets", "_last", "_n", "_width")

    def __init__(self, window: float, buckets: int) -> None:
        self._width = window / buckets
        self._n = buckets
        self._buckets: deque[list[float]] = deque()  # [index, integral, covered]
        self._last: tuple[float, float] | None = None

    def observe(self, now: float, value: float) -> float:
        """Record ``value`` from ``now`` on; return the mean over the window ending at ``now``."""
        if self._last is not None:
            self._integrate(self._last[0], now, self._last[1])
        self._last = (now, value)
        oldest = math.floor(now / self._width) - self._n
        while self._buckets and self._buckets[0][0] <= oldest:
            self._buckets.popleft()
        return self.mean()

    def mean(self) -> float:
        covered = sum(b[2] for b in self._buckets)
        return sum(b[1] for b in self._buckets) / covered if covered > 0 else 0.0

    def _integrate(self, start: float, end: float, value: float) -> None:
        start = max(start, end - self._n * self._width)
        while start < end:
            idx = math.floor(start / self._width)
            edge = min(end, (idx + 1) * self._width)
            if not self._buckets or self._buckets[-1][0] != idx:
                self._buckets.append([float(idx), 0.0, 0.0])
            bucket = self._buckets[-1]
            bucket[1] += value * (edge - start)
            bucket[2] += edge - start
            start = edge


@dataclass(slots=True)
class AdaptiveHoldback:
    """``window``: seconds of memory; ``safety``: multiples of sqrt(demand) added for bursts;
    ``margin``: extra requests reserved per band with demand."""

    window: float = 30.0
    buckets: int = 10
    safety: float = 1.0
    margin: float = 1.0
    min_ceiling: float = 0.0
    max_ceiling: float = 1.0
    name: str = "adaptive-holdback-policy"
    _demand: dict[int, WindowMean] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ConfigError("must be > 0", field="window")
        if self.buckets < 1:
            raise ConfigError("must be >= 1", field="buckets")
        if self.safety < 0:
            raise ConfigError("must be >= 0", field="safety")
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

    def headroom(self, priority: int) -> float:
        """The headroom target ``H`` (requests) of a band as last computed; 0 without demand."""
        mean = self._demand.get(priority)
        return 0.0 if mean is None else self._target(mean.mean())

    def _target(self, demand: float) -> float:
        if demand <= _EPS:
            return 0.0
        return demand + self.safety * math.sqrt(demand) + self.margin

    def _reserve_of(self, band: BandLoad, view: LimitInput) -> float:
        occupancy = float(band.queued + band.inflight)
        mean = self._demand.get(band.priority)
        if mean is None:
            mean = self._demand[band.priority] = WindowMean(self.window, self.buckets)
        spare = self._target(mean.observe(view.now, occupancy)) - occupancy
        # Whole requests: a fractional reserve would let a lower band take one slot too many
        # (a band is gated only once saturation reaches its ceiling).
        return max(0, math.ceil(spare - _EPS)) * view.unit
