"""Request records, windows and percentiles: the measurement rules of the isolation checks
(pure).

A record is one client request: when it was sent and ended, its time to first token, its
output tokens and whether it succeeded. Only records that lie wholly inside a window count,
so start-up and wind-down never blur a comparison. Percentiles interpolate linearly between
the two nearest ranks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "RequestRecord",
    "TreatmentStats",
    "Window",
    "baseline_window",
    "mixed_window",
    "percentile",
    "treatment_stats",
]


@dataclass(frozen=True)
class RequestRecord:
    """One client request (times in seconds of one clock)."""

    start: float
    end: float
    ttft: float | None
    tokens: int
    ok: bool
    request_id: str = ""
    abandoned: bool = False  # the client gave up (its timeout) before an answer
    status: int = 0  # the HTTP status answered (0: none, the client gave up or the call failed)

    @property
    def e2e(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Window:
    """``[start, end]``; empty when ``end <= start``."""

    start: float
    end: float

    @property
    def length(self) -> float:
        return self.end - self.start

    def holds(self, record: RequestRecord) -> bool:
        return record.start >= self.start and record.end <= self.end

    def inside(self, records: Iterable[RequestRecord]) -> list[RequestRecord]:
        return [r for r in records if self.holds(r)]


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p`` quantile (0..1) by linear interpolation between ranks; empty raises."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = p * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def baseline_window(records: Sequence[RequestRecord], warmup: float) -> Window:
    """From the first start plus the warm-up to the last end."""
    if not records:
        return Window(0.0, 0.0)
    return Window(min(r.start for r in records) + warmup, max(r.end for r in records))


def mixed_window(members: Sequence[Sequence[RequestRecord]], warmup: float) -> Window:
    """Where every member runs: the latest first start plus the warm-up to the earliest last
    end. A member without records leaves no common window."""
    if not members or any(not m for m in members):
        return Window(0.0, 0.0)
    start = max(min(r.start for r in m) for m in members) + warmup
    return Window(start, min(max(r.end for r in m) for m in members))


@dataclass(frozen=True)
class TreatmentStats:
    """What the checks compare, over the records inside one window."""

    samples: int
    errors: int
    ttft: tuple[float, ...]
    e2e: tuple[float, ...]
    rps: float
    tps: float

    def ttft_p(self, p: float) -> float | None:
        return percentile(self.ttft, p) if self.ttft else None

    def e2e_p(self, p: float) -> float | None:
        return percentile(self.e2e, p) if self.e2e else None


def treatment_stats(records: Sequence[RequestRecord], window: Window) -> TreatmentStats:
    """Samples, errors, latencies and rates of the records inside ``window``; rates are per
    second of the window."""
    inside = window.inside(records)
    ok = [r for r in inside if r.ok]
    length = window.length
    return TreatmentStats(
        samples=len(ok),
        errors=len(inside) - len(ok),
        ttft=tuple(r.ttft for r in ok if r.ttft is not None),
        e2e=tuple(r.e2e for r in ok),
        rps=len(ok) / length if length > 0 else 0.0,
        tps=sum(r.tokens for r in ok) / length if length > 0 else 0.0,
    )
