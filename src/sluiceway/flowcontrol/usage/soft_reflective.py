"""``soft-reflective-ceiling-policy``: lower bands pause as saturation rises, and near the set
point alternate open/closed so they still get a thin share instead of starving.

For band i > 0 of N: reflection point ``1 - i s / (N - 1)``; below it the band is open (1.0);
at ``s >= 1`` closed (0.0); otherwise open on one cycle in ``max(1, round(s / (1 - s)))``
(a counter shared by all bands, advanced once per call). Band 0 (the top) is always 1.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sluiceway.flowcontrol.base import LimitInput

__all__ = ["SoftReflective"]


@dataclass(slots=True)
class SoftReflective:
    name: str = "soft-reflective-ceiling-policy"
    _tick: int = field(default=0, repr=False)

    def ceilings(self, view: LimitInput) -> Sequence[float]:
        n, s = len(view.bands), view.saturation
        self._tick += 1
        out = [1.0] * n
        for i in range(1, n):
            if s < 1.0 - i * s / (n - 1):
                continue
            out[i] = self._alternate(s)
        return out

    def _alternate(self, s: float) -> float:
        if s >= 1.0:
            return 0.0
        period = max(1, round(s / (1.0 - s)))
        return 1.0 if self._tick % period == 0 else 0.0
