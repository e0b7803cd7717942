"""The ``Retry-After`` of the router's 429 and 503 answers: when trying again is worth it (pure).

::

    estimate = ceil(queued ahead / drain rate)          seconds
    bound    = min(60, remaining / 2)                    remaining: the request's queue budget left
    answer   = min(estimate, bound / 1.2) x (1 ± 0.2)    rounded, never above bound, at least 1

*Queued ahead* is what a retry would find before it: the requests queued in the request's band
and in every band above it (strict priority serves those first). The *drain rate* is the pool's
recent dispatches per second (:class:`DrainRate`). The bound keeps a client from being told to
wait longer than half of what it may still spend (its queue TTL minus the time it queued), and
never past 60 s (the official ``openai`` client gives up on a ``Retry-After`` above 120 s, and a
queue a minute deep has changed by the time the client is back). The estimate is cut to
``bound / 1.2`` *before* the ±20 % jitter, so a burst rejected at once comes back spread over
[0.8, 1.2] of its wait even at the bound instead of together at the bound. At least 1 s:
``Retry-After`` is whole seconds, and 0 would invite an immediate retry into the same queue.

:class:`RetryAfter` keeps the rate and the random source for the router; the jitter's draw is
injected so tests are exact.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Final

from sluiceway.clock import Clock

__all__ = ["DRAIN_TAU_SECONDS", "MAX_SECONDS", "DrainRate", "RetryAfter", "retry_after_seconds"]

MAX_SECONDS: Final = 60
JITTER: Final = 0.2
# The drain rate's memory (scaled seconds): long enough to average over several completions of
# multi-second generations, short enough to follow a pool that slows or stops within a TTL.
DRAIN_TAU_SECONDS: Final = 10.0


def retry_after_seconds(
    *, ahead: int, drain_rate: float, remaining: float | None, draw: float
) -> int:
    """Whole seconds to wait before trying again (module doc). ``remaining``: the request's
    queue budget left in seconds (None: unlimited); ``draw``: uniform in [0, 1)."""
    if ahead <= 0:
        estimate = 0.0
    elif drain_rate <= 0:
        estimate = math.inf  # nothing drains: as long as the bound allows
    else:
        estimate = float(math.ceil(ahead / drain_rate))
    bound = float(MAX_SECONDS)
    if remaining is not None:
        bound = min(bound, max(0.0, remaining) / 2)
    base = min(estimate, bound / (1 + JITTER))
    jittered = base * (1 + JITTER * (2 * draw - 1))
    return max(1, min(round(jittered), math.floor(bound)))


class DrainRate:
    """The pool's recent dispatches per second: an exponentially decaying count of dispatches.

    Each dispatch adds 1 to a count that decays as ``exp(-dt / tau)``; the rate is the count
    over ``tau``. Chosen over a sliding window because it costs O(1) per event and per read
    with no buffer and no timer (the router may dispatch hundreds per cycle), and because it
    falls smoothly when the pool stops draining, where a window holds its last rate and then
    drops to zero at once. In its first ``tau`` seconds the count has not filled up; it is
    divided by ``1 - exp(-age / tau)`` (its fill), with ``age`` at least 1 s so that the first
    few dispatches do not read as a torrent. Times are the injected clock's (scaled seconds).
    """

    __slots__ = ("_at", "_count", "_start", "tau")

    def __init__(self, now: float, tau: float = DRAIN_TAU_SECONDS) -> None:
        if tau <= 0:
            raise ValueError("tau must be > 0")
        self.tau = tau
        self._start = now
        self._at = now
        self._count = 0.0

    def note(self, count: int, now: float) -> None:
        """``count`` requests were dispatched at ``now``."""
        self._count = self._decayed(now) + count
        self._at = max(self._at, now)

    def rate(self, now: float) -> float:
        """Dispatches per second, recently."""
        fill = 1.0 - math.exp(-max(1.0, now - self._start) / self.tau)
        return self._decayed(now) / (self.tau * fill)

    def _decayed(self, now: float) -> float:
        return self._count * math.exp(-max(0.0, now - self._at) / self.tau)


class RetryAfter:
    """The router's ``Retry-After`` source: its drain rate, read on its clock, and a random
    source for the jitter (``rng``: uniform in [0, 1); injected in tests)."""

    def __init__(self, clock: Clock, rng: Callable[[], float] = random.random) -> None:
        self._clock = clock
        self._rng = rng
        self.drain = DrainRate(clock.now())

    def dispatched(self, count: int) -> None:
        if count:
            self.drain.note(count, self._clock.now())

    def seconds(self, ahead: int, remaining: float | None) -> int:
        rate = self.drain.rate(self._clock.now())
        return retry_after_seconds(
            ahead=ahead, drain_rate=rate, remaining=remaining, draw=self._rng()
        )
