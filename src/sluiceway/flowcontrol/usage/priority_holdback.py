"""``priority-holdback-policy``: ceilings fall linearly from ``max_ceiling`` (highest band) to
``min_ceiling`` (lowest), so lower bands stop dispatching earlier and leave headroom.

Upstream-exact (docs/design-rules.md rule 20): the spread runs over every provisioned band, band 0
and empty bands included. Domains: ``rank`` (by position), ``value`` (by priority value), and
``explicit`` (a ``ceilings`` map by priority; an unlisted band takes the ceiling of the nearest
higher band, the top band defaults to ``max_ceiling``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.base import LimitInput

__all__ = ["PriorityHoldback", "rank_ceilings", "value_ceilings"]

Domain = Literal["rank", "value", "explicit"]


def rank_ceilings(n: int, lo: float, hi: float) -> list[float]:
    """``c_i = hi - i (hi - lo) / (n - 1)``, i = 0 for the highest band."""
    if n == 1:
        return [hi]
    step = (hi - lo) / (n - 1)
    return [hi - i * step for i in range(n)]


def value_ceilings(priorities: Sequence[int], lo: float, hi: float) -> list[float]:
    """``c = lo + (p - p_min) / (p_max - p_min) (hi - lo)``; all equal -> ``hi``."""
    p_max, p_min = max(priorities), min(priorities)
    if p_max == p_min:
        return [hi] * len(priorities)
    return [lo + (p - p_min) / (p_max - p_min) * (hi - lo) for p in priorities]


@dataclass(frozen=True, slots=True)
class PriorityHoldback:
    min_ceiling: float
    max_ceiling: float = 1.0
    domain: Domain = "rank"
    explicit: Mapping[int, float] = field(default_factory=dict)
    name: str = "priority-holdback-policy"

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_ceiling < 1.0:
            raise ConfigError("must be in [0, 1)", field="minCeiling")
        if not 0.0 < self.max_ceiling <= 1.0:
            raise ConfigError("must be in (0, 1]", field="maxCeiling")
        if self.min_ceiling >= self.max_ceiling:
            raise ConfigError("must be below maxCeiling", field="minCeiling")
        for prio, value in self.explicit.items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError("must be in [0, 1]", field=f"ceilings.{prio}")

    def ceilings(self, view: LimitInput) -> Sequence[float]:
        priorities = [b.priority for b in view.bands]
        if self.domain == "rank":
            return rank_ceilings(len(priorities), self.min_ceiling, self.max_ceiling)
        if self.domain == "value":
            return value_ceilings(priorities, self.min_ceiling, self.max_ceiling)
        return self._explicit(priorities)

    def _explicit(self, priorities: Sequence[int]) -> list[float]:
        out: list[float] = []
        current = self.max_ceiling
        for prio in priorities:
            current = min(current, self.explicit.get(prio, current))
            out.append(current)
        return out
