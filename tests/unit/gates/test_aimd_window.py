"""The aimd window: slow start, additive increase, one cut per flight, the Retry-After hold,
its clamps, and which answers count as capacity rejections."""

from __future__ import annotations

import pytest

from sluiceway.gates.aimd_window import (
    AimdWindow,
    AnswerKind,
    WindowSettings,
    answer_kind,
    holding_retry_after,
)
from sluiceway.wire import headers as h

NOW = 1_700_000_000.0
SUCCESS, CAPACITY, NEUTRAL = AnswerKind.SUCCESS, AnswerKind.CAPACITY, AnswerKind.NEUTRAL


def fill(window: AimdWindow, now: float = NOW) -> list[int]:
    """Dispatch until the window is full; the numbers of the new dispatches."""
    numbers = []
    while (number := window.take(now)) is not None:
        numbers.append(number)
    return numbers


def one(window: AimdWindow, now: float = NOW) -> int:
    """Dispatch one request, which the window must admit."""
    number = window.take(now)
    assert number is not None
    return number


def succeed(window: AimdWindow, number: int) -> None:
    """One success answered while the window is full, then its request ends."""
    window.answer(SUCCESS, number, NOW)
    window.finished()


def round_trip(window: AimdWindow) -> None:
    """One flight: fill the window, then every request in it succeeds."""
    for number in fill(window):
        succeed(window, number)


@pytest.mark.parametrize(
    ("status", "reason", "kind"),
    [
        (200, "", SUCCESS),
        (429, h.REASON_SATURATED, CAPACITY),
        (503, h.REASON_SATURATED, CAPACITY),
        (429, h.REASON_EVICTED, CAPACITY),
        (429, "", CAPACITY),  # a bare 429: a model server's own
        (503, "", CAPACITY),
        (429, h.REASON_TTL_EXPIRED, NEUTRAL),
        (503, h.REASON_CONTEXT_CANCELLED, NEUTRAL),
        (503, h.REASON_SHUTTING_DOWN, NEUTRAL),
        (500, "", NEUTRAL),
        (400, h.REASON_SATURATED, NEUTRAL),
        (None, "", NEUTRAL),  # no HTTP answer: a transport failure
    ],
)
def test_classify(status: int | None, reason: str, kind: AnswerKind) -> None:
    assert answer_kind(status, reason) is kind


def test_admits_while_in_flight_is_below_the_window() -> None:
    window = AimdWindow(WindowSettings(min_window=2, max_window=8))
    assert fill(window) == [1, 2]
    assert window.take(NOW) is None
    window.finished()
    assert window.take(NOW) == 3


def test_slow_start_doubles_per_round_trip_up_to_ssthresh() -> None:
    window = AimdWindow(WindowSettings(min_window=1, max_window=32))
    sizes = []
    for _ in range(4):
        round_trip(window)
        sizes.append(window.window)
    assert sizes == [2, 4, 8, 16]


def test_additive_increase_above_ssthresh() -> None:
    window = AimdWindow(WindowSettings(min_window=4, max_window=32, increase=2.0))
    window.ssthresh = 4.0
    round_trip(window)
    assert 5.5 < window.window < 6.5  # about +increase per round trip, not doubled
    before = window.window
    round_trip(window)
    assert 1.5 < window.window - before < 2.5


def test_no_growth_while_the_window_is_not_full() -> None:
    window = AimdWindow(WindowSettings(min_window=4, max_window=32))
    number = one(window)
    window.answer(SUCCESS, number, NOW)
    assert window.window == 4  # one of four in flight: the window proved nothing


def test_capacity_rejection_cuts_once_per_flight() -> None:
    window = AimdWindow(WindowSettings(min_window=1, max_window=64))
    window.window = 16.0
    flight = fill(window)
    for number in flight[:5]:  # five rejections of one overfull flight
        window.answer(CAPACITY, number, NOW)
        window.finished()
    assert (window.window, window.ssthresh, window.cuts) == (8, 8, 1)
    for _ in flight[5:]:
        window.finished()
    late = fill(window)  # dispatched after the cut: its rejection cuts again
    window.answer(CAPACITY, late[0], NOW)
    assert (window.window, window.cuts) == (4, 2)


def test_ttl_and_other_neutral_answers_change_nothing() -> None:
    window = AimdWindow(WindowSettings(min_window=1, max_window=16))
    window.window = 8.0
    for number in fill(window):
        kind = answer_kind(429, h.REASON_TTL_EXPIRED)
        window.answer(kind, number, NOW, retry_after=5.0)
    assert (window.window, window.cuts, window.held(NOW)) == (8, 0, False)


def test_retry_after_holds_then_reopens_in_slow_start() -> None:
    window = AimdWindow(WindowSettings(min_window=1, max_window=16, hold_duration=30.0))
    window.window = 8.0
    flight = fill(window)
    window.answer(CAPACITY, flight[0], NOW, retry_after=5.0)
    for _ in flight:
        window.finished()
    assert window.take(NOW) is None and window.take(NOW + 4.9) is None
    assert (window.window, window.ssthresh) == (1, 4)
    later = NOW + 5.0
    number = one(window, later)
    window.answer(SUCCESS, number, later)
    assert window.window == 2  # slow start again, below ssthresh


def test_hold_is_capped_by_hold_duration_and_off_at_zero() -> None:
    capped = AimdWindow(WindowSettings(max_window=8, hold_duration=10.0))
    capped.answer(CAPACITY, one(capped), NOW, retry_after=3600.0)
    assert capped.held(NOW + 9.9) and not capped.held(NOW + 10.0)
    off = AimdWindow(WindowSettings(max_window=8, hold_duration=0.0))
    off.answer(CAPACITY, one(off), NOW, retry_after=60.0)
    assert not off.held(NOW)


def test_window_stays_within_min_and_max() -> None:
    window = AimdWindow(WindowSettings(min_window=2, max_window=5))
    for _ in range(10):
        round_trip(window)
    assert window.window == 5
    for _ in range(10):
        window.answer(CAPACITY, one(window), NOW)
        window.finished()
    assert window.window == 2 and window.ssthresh == 2 and window.limit == 2


def test_signal_above_target_cuts_once_per_round_trip_and_holds_growth() -> None:
    window = AimdWindow(WindowSettings(min_window=1, max_window=32))
    window.window = 16.0
    flight = fill(window)
    window.signal(True)
    window.signal(True)  # the same stale picture: no second cut
    assert (window.window, window.cuts) == (8, 1)
    for number in flight:
        window.answer(SUCCESS, number, NOW)  # answers of the old flight
        window.finished()
    assert window.window == 8  # growth held while the signal is above its target
    window.signal(True)
    assert window.cuts == 1  # nothing dispatched after the cut has come back yet
    succeed(window, fill(window)[0])
    window.signal(True)
    assert (window.window, window.cuts) == (4, 2)


def test_signal_at_or_below_target_lets_answers_grow_the_window() -> None:
    window = AimdWindow(WindowSettings(min_window=1, max_window=32))
    window.signal(True)
    window.signal(False)
    round_trip(window)
    assert window.window == 2


def test_only_a_bare_rejections_retry_after_holds() -> None:
    assert holding_retry_after("", 4.0) == 4.0
    assert holding_retry_after("", None) is None
    for reason in (h.REASON_SATURATED, h.REASON_EVICTED, h.REASON_TTL_EXPIRED):
        assert holding_retry_after(reason, 4.0) is None


def test_a_ceiling_caps_growth_and_pulls_the_window_down() -> None:
    window = AimdWindow(WindowSettings(min_window=1, max_window=16))
    window.cap(8)  # one of two processors: half of max_window
    for _ in range(40):
        for number in fill(window):
            succeed(window, number)
    assert window.window == 8.0 and window.limit == 8
    window.cap(5)  # a third processor joined
    assert window.window == 5.0 and window.limit == 5
    window.cap(0)  # never below min_window
    assert window.top == 1 and window.limit == 1
    window.cap(99)  # never above max_window
    assert window.top == 16
