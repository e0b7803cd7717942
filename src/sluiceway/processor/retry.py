"""Retry math: equal-jitter exponential backoff, Retry-After within the deadline (pure).

All durations are scaled seconds; ``rand`` is a uniform draw in [0, 1) supplied by the caller
so that tests are deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

__all__ = [
    "MAX_BACKOFF_SECONDS",
    "RetryPlan",
    "backoff_seconds",
    "parse_retry_after",
    "plan_retry",
]

MAX_BACKOFF_SECONDS = 60.0


def backoff_seconds(
    retry_count: int, remaining: float, rand: float, cap: float = MAX_BACKOFF_SECONDS
) -> float:
    """Equal-jitter backoff before attempt ``retry_count + 2`` (scaled seconds).

    ``temp = min(cap, remaining, 2 * 2**n)`` with ``n = retry_count + 1``; the wait is
    ``temp/2 + rand * temp/2``: with the default cap of 60, attempts 1..5 wait [2,4), [4,8),
    [8,16), [16,32), [30,60).
    """
    exponent = min(retry_count + 1, 32)
    temp = max(0.0, min(cap, remaining, 2.0 * 2.0**exponent))
    return temp / 2 + rand * temp / 2


def parse_retry_after(value: str | None, now: float) -> float | None:
    """A ``Retry-After`` header as a delay in seconds (>= 0), or None when absent or unreadable.

    Accepts delta-seconds (integers, and decimals as a courtesy) and HTTP dates (relative to
    ``now``, Unix seconds).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(text).timestamp() - now
        except (TypeError, ValueError, IndexError):
            return None
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


@dataclass(frozen=True, slots=True)
class RetryPlan:
    """When to try again: ``delay`` scaled seconds from now; ``terminal`` when no attempt fits
    before the deadline any more."""

    delay: float
    terminal: bool


def plan_retry(
    *,
    retry_count: int,
    remaining: float,
    retry_after: float | None,
    rand: float,
    jitter: float,
    cap: float = MAX_BACKOFF_SECONDS,
) -> RetryPlan:
    """The delay before the next attempt, or terminal when the deadline leaves no room.

    ``remaining`` = deadline - now (scaled seconds). A Retry-After larger than the backoff is
    honoured but clamped to half the remaining time, plus up to 25 % jitter (``jitter`` in
    [0, 1)), so a far-off Retry-After never ends a request early. The plan is terminal when
    ``remaining <= 0`` or the next attempt would start at or after the deadline. ``cap``
    bounds the backoff (not a Retry-After).
    """
    if remaining <= 0:
        return RetryPlan(0.0, True)
    delay = backoff_seconds(retry_count, remaining, rand, cap)
    if retry_after is not None and retry_after > delay:
        clamped = min(retry_after, remaining / 2)
        delay = max(delay, clamped * (1 + jitter / 4))
    return RetryPlan(delay, delay >= remaining)
