"""The Retry-After math and the drain rate behind it, on a virtual clock."""

from __future__ import annotations

import math

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.router.retry_after import (
    DRAIN_TAU_SECONDS,
    MAX_SECONDS,
    DrainRate,
    RetryAfter,
    retry_after_seconds,
)

DRAWS = [i / 100 for i in range(100)]


def _seconds(ahead: int, rate: float, remaining: float | None = None, draw: float = 0.5) -> int:
    return retry_after_seconds(ahead=ahead, drain_rate=rate, remaining=remaining, draw=draw)


def test_the_queue_ahead_over_the_drain_rate_rounded_up() -> None:
    assert _seconds(10, 2.0) == 5  # the middle draw: no jitter
    assert _seconds(11, 2.0) == 6  # 5.5 s rounded up, as ceil(ahead / rate)
    assert _seconds(3, 100.0) == 1  # under a second: the floor


def test_jitter_spreads_twenty_percent_either_way() -> None:
    got = {_seconds(100, 4.0, draw=d) for d in DRAWS}  # 25 s before the jitter
    assert min(got) == 20 and max(got) == 30
    assert len(got) == 11


def test_nothing_queued_ahead_is_one_second() -> None:
    assert {_seconds(0, 5.0, draw=d) for d in DRAWS} == {1}
    assert {_seconds(0, 0.0, draw=d) for d in DRAWS} == {1}


def test_never_above_the_cap_and_still_spread_there() -> None:
    deep = {_seconds(10_000, 1.0, draw=d) for d in DRAWS}
    stalled = {_seconds(5, 0.0, draw=d) for d in DRAWS}  # nothing drains: as far as allowed
    for got in (deep, stalled):
        assert max(got) <= MAX_SECONDS and min(got) >= 40
        assert len(got) > 10  # a burst rejected at once does not come back at once
    assert _seconds(10_000, 1.0) == 50


@pytest.mark.parametrize("remaining", [30.0, 15.0, 7.3, 2.0])
def test_never_more_than_half_the_time_left(remaining: float) -> None:
    got = {_seconds(10_000, 1.0, remaining, draw=d) for d in DRAWS}
    assert max(got) <= max(1, math.floor(remaining / 2))
    assert max(got) == max(1, math.floor(remaining / 2)) or remaining < 4


@pytest.mark.parametrize("remaining", [1.5, 0.0, -3.0])
def test_at_least_one_second_even_when_no_time_is_left(remaining: float) -> None:
    assert {_seconds(50, 1.0, remaining, draw=d) for d in DRAWS} == {1}


def test_a_steady_rate_is_read_from_the_start() -> None:
    rate = DrainRate(0.0)
    for n in range(1, 21):  # 10 a second for 2 s
        rate.note(1, n / 10)
    assert rate.rate(2.0) == pytest.approx(10.0, rel=0.1)
    for n in range(21, 601):  # then for a minute
        rate.note(1, n / 10)
    assert rate.rate(60.0) == pytest.approx(10.0, rel=0.05)


def test_a_pool_that_stops_draining_reads_ever_slower() -> None:
    rate = DrainRate(0.0)
    for n in range(1, 601):
        rate.note(2, n / 10)  # 20 a second
    assert rate.rate(60.0 + DRAIN_TAU_SECONDS) == pytest.approx(20.0 / math.e, rel=0.05)
    assert rate.rate(60.0 + 10 * DRAIN_TAU_SECONDS) < 0.01
    assert DrainRate(0.0).rate(5.0) == 0.0


def test_the_first_dispatches_do_not_read_as_a_torrent() -> None:
    rate = DrainRate(0.0)
    rate.note(100, 0.001)  # a backlog dispatched in the first cycle
    assert rate.rate(0.001) == pytest.approx(100 / (10 * (1 - math.exp(-0.1))), rel=1e-6)
    assert rate.rate(0.001) < 1_100


def test_a_non_positive_memory_is_refused() -> None:
    with pytest.raises(ValueError, match="tau"):
        DrainRate(0.0, tau=0.0)


def test_the_routers_source_reads_its_clock_and_draws_from_its_random_source() -> None:
    clock = VirtualClock()
    draws = iter([0.0, 0.5, 0.999])
    retry = RetryAfter(clock, rng=lambda: next(draws))
    for _ in range(100):
        clock.advance(0.5)
        retry.dispatched(1)  # 2 a second
    retry.dispatched(0)
    assert retry.drain.rate(clock.now()) == pytest.approx(2.0, rel=0.05)
    # 20 ahead at 2 a second: 10 s, then jittered by the draws in turn.
    assert [retry.seconds(20, None) for _ in range(3)] == [8, 10, 12]
    assert RetryAfter(clock, rng=lambda: 0.5).seconds(20, None) == 50  # no rate yet
