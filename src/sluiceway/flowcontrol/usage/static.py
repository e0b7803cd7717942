"""``static-usage-limit-policy``: the same ceiling for every band (default 1.0 = no holdback)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from sluiceway.flowcontrol.base import LimitInput

__all__ = ["StaticUsageLimit"]


@dataclass(frozen=True, slots=True)
class StaticUsageLimit:
    threshold: float = 1.0
    name: str = "static-usage-limit-policy"

    def ceilings(self, view: LimitInput) -> Sequence[float]:
        return _same(self.threshold, len(view.bands))


@functools.lru_cache(maxsize=64)
def _same(threshold: float, n: int) -> tuple[float, ...]:
    return (threshold,) * n
