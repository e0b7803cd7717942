"""What the demo's steps report: pass/fail checks a person can read, and the measurements the
tables, the HTML report and the plots are drawn from."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sluiceway.demo.observe import Event

__all__ = ["Check", "Findings", "LaneRow", "StepReport", "nearest_rank"]


@dataclass(frozen=True)
class Check:
    """One verdict: ``passed``, or not; ``busy`` when the machine was too loaded to judge a
    timing check even at time scale 1 (shown as "too busy", never as a NO)."""

    what: str
    passed: bool
    detail: str
    busy: bool = False

    @property
    def verdict(self) -> str:
        return "too busy" if self.busy else "yes" if self.passed else "NO"


@dataclass
class StepReport:
    """One step's checks; it passes when none says NO (a "too busy" check is no failure)."""

    key: str
    title: str
    wall_seconds: float = 0.0
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed or c.busy for c in self.checks)

    def check(self, what: str, passed: bool, detail: object) -> bool:
        self.checks.append(Check(what, bool(passed), str(detail)))
        return bool(passed)

    def too_busy(self, what: str, detail: object) -> None:
        """Record that ``what`` could not be judged on a machine this loaded."""
        self.checks.append(Check(what, False, str(detail), busy=True))


@dataclass(frozen=True)
class LaneRow:
    """One lane of scenario B: how many ran, when, how long they waited (scaled seconds)."""

    lane: str
    count: int
    first_start: float
    last_start: float
    wait_p50: float
    wait_max: float
    done_rank: int  # 1 = the lane whose last request finished first


@dataclass
class Findings:
    """Measurements across steps (scaled seconds, relative to each step's start)."""

    lanes: list[LaneRow] = field(default_factory=list)
    lane_events: list[Event] = field(default_factory=list)  # scenario B, times relative
    quota: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    ttft: dict[str, list[float]] = field(default_factory=dict)  # label -> samples
    occupancy: dict[str, list[tuple[float, dict[str, int]]]] = field(default_factory=dict)


def nearest_rank(values: list[float], q: float) -> float:
    """Nearest-rank nearest_rank (``q`` in [0, 100]); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
