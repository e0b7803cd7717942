"""The ``aimd`` gate's window: a TCP-like congestion window over requests in flight (pure).

No I/O and no clock: every event passes its time in (scaled seconds). The gate (``aimd``)
feeds it; this module decides.

- **Admission**: while no hold is on and in flight < ``limit`` (the window, rounded down).
- **Growth**, on a success of a request since whose dispatch the window has been full (in
  flight reached the limit, or a request found no room: a window nobody fills proves nothing,
  as TCP's cwnd-limited rule): +1 per success below ``ssthresh`` (slow start, doubling per
  round trip), then +``increase``/window per success (``increase`` per round trip). Held while
  a hold is on or the signal is above its target.
- **Cut**, on a capacity rejection: ``ssthresh = window x decrease``, the window drops to it.
  Once per flight, as TCP's recovery point: only a rejection of a request dispatched after the
  last cut cuts again, so the rejections of one overfull flight count once.
- **Hold**, on a capacity rejection with a Retry-After and no drop reason (a model server
  or a gateway asking every client to back off): closed for min(Retry-After,
  ``hold_duration``), then reopened at ``min_window`` in slow start up to ``ssthresh``. The
  router's own rejections (``rejected-saturated``, ``evicted``) carry a Retry-After too, but
  it estimates when *that* request finds room in its band's queue: the processor's retry of
  the request honours it, and the cut once per flight answers the capacity they report.
  Holding on each of them pinned the window at ``min_window`` (:func:`holding_retry_after`).
- **Signal** (optional): above its target, one cut per round trip (once a request dispatched
  after the last cut has been answered) and no growth; at or below it, answers alone decide.

- **Ceiling**: ``max_window``, or this processor's part of it while several processors share
  the pool (:meth:`AimdWindow.cap`, the split of ``pool_share``), so M windows together reach
  at most what one would; each still learns from its own answers, as TCP flows share a link.

What counts as a capacity rejection is :func:`answer_kind`'s: 429 or 503 with the router's
``rejected-saturated`` or ``evicted`` reason, or with no reason at all (a bare 429 is a
model server's). A TTL expiry, a cancelled client, a router shutting down, other errors and
transport failures change nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from sluiceway.wire.headers import REASON_EVICTED, REASON_SATURATED

__all__ = ["AimdWindow", "AnswerKind", "WindowSettings", "answer_kind", "holding_retry_after"]

CAPACITY_STATUSES = frozenset({429, 503})
CAPACITY_REASONS = (REASON_SATURATED, REASON_EVICTED)


class AnswerKind(StrEnum):
    """What an answer says about the pool's capacity."""

    SUCCESS = "success"
    CAPACITY = "capacity"
    NEUTRAL = "neutral"


def answer_kind(status: int | None, reason: str) -> AnswerKind:
    """The kind of an answer (``status`` None: no HTTP answer) from its router drop reason."""
    if status is None or (status >= 400 and status not in CAPACITY_STATUSES):
        return AnswerKind.NEUTRAL
    if status < 400:
        return AnswerKind.SUCCESS
    if not reason or reason.startswith(CAPACITY_REASONS):
        return AnswerKind.CAPACITY
    return AnswerKind.NEUTRAL


def holding_retry_after(reason: str, retry_after: float | None) -> float | None:
    """The Retry-After that may hold the window: a bare 429 or 503's, not one that comes with
    the router's drop reason (module doc)."""
    return None if reason else retry_after


@dataclass(frozen=True, slots=True)
class WindowSettings:
    """Bounds and steps of a window (validated by ``AimdParams``): ``min_window`` <=
    ``max_window``, ``increase`` > 0, ``decrease`` in (0, 1), ``hold_duration`` >= 0 scaled
    seconds (0: a Retry-After holds nothing)."""

    min_window: int = 1
    max_window: int = 16
    increase: float = 1.0
    decrease: float = 0.5
    hold_duration: float = 30.0


class AimdWindow:
    """One pool's window. Dispatches are numbered from 1; an answer names its dispatch."""

    def __init__(self, settings: WindowSettings) -> None:
        self.settings = settings
        self.window = float(settings.min_window)
        self.ssthresh = float(settings.max_window)
        self.in_flight = 0
        self.sent = 0  # dispatches so far (the last one's number)
        self.answered = 0  # the highest dispatch number answered
        self.recover = -1  # ``sent`` at the last cut: a later cut needs a later dispatch
        self.full_at = 0  # ``sent`` when the window was last found full
        self.hold_until = 0.0
        self.signal_high = False
        self.cuts = 0
        self.top = settings.max_window  # the ceiling: max_window, or this processor's part

    def cap(self, top: int) -> None:
        """Set the ceiling to ``top`` (kept within [min_window, max_window]); a lower one
        pulls the window down at once, so the next cut starts from it."""
        s = self.settings
        self.top = max(s.min_window, min(top, s.max_window))
        self.window = min(self.window, float(self.top))

    @property
    def limit(self) -> int:
        """The most requests in flight the window allows."""
        return max(self.settings.min_window, math.floor(min(self.window, self.top)))

    def held(self, now: float) -> bool:
        return now < self.hold_until

    def take(self, now: float) -> int | None:
        """One more in flight, and its dispatch number; None while held or full."""
        if self.held(now):
            return None
        if self.in_flight >= self.limit:
            self.full_at = self.sent  # a request found no room
            return None
        self.in_flight += 1
        self.sent += 1
        if self.in_flight >= self.limit:
            self.full_at = self.sent
        return self.sent

    def finished(self) -> None:
        """A request admitted through the window has ended (answered or not)."""
        self.in_flight = max(0, self.in_flight - 1)

    def answer(
        self, kind: AnswerKind, number: int, now: float, retry_after: float | None = None
    ) -> None:
        """Dispatch ``number`` was answered (while it still counts in flight)."""
        self.answered = max(self.answered, number)
        if kind is AnswerKind.SUCCESS:
            self._grow(number, now)
        elif kind is AnswerKind.CAPACITY:
            if number > self.recover:
                self._cut()
            self._hold(now, retry_after)

    def signal(self, above: bool) -> None:
        """A fresh signal reading: ``above`` its target or not (a blind one is not)."""
        self.signal_high = above
        if above and self.answered > self.recover:
            self._cut()

    def _grow(self, number: int, now: float) -> None:
        if self.held(now) or self.signal_high or number > self.full_at:
            return
        step = 1.0 if self.window < self.ssthresh else self.settings.increase / self.window
        self.window = min(float(self.top), self.window + step)

    def _cut(self) -> None:
        floor = float(self.settings.min_window)
        self.ssthresh = max(floor, self.window * self.settings.decrease)
        self.window = self.ssthresh
        self.recover = self.sent
        self.cuts += 1

    def _hold(self, now: float, retry_after: float | None) -> None:
        cap = self.settings.hold_duration
        if retry_after is None or retry_after <= 0 or cap <= 0:
            return
        self.hold_until = max(self.hold_until, now + min(retry_after, cap))
        self.window = float(self.settings.min_window)
