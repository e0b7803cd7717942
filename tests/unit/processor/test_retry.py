"""Backoff math, Retry-After parsing and clamping."""

from __future__ import annotations

import pytest

from sluiceway.processor.retry import backoff_seconds, parse_retry_after, plan_retry

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("retry_count", "low", "high"),
    [(0, 2, 4), (1, 4, 8), (2, 8, 16), (3, 16, 32), (4, 30, 60), (9, 30, 60)],
)
def test_equal_jitter_backoff_doubles_and_caps(retry_count: int, low: float, high: float) -> None:
    assert backoff_seconds(retry_count, 1e9, 0.0) == pytest.approx(low)
    assert backoff_seconds(retry_count, 1e9, 0.999999) == pytest.approx(high, rel=1e-5)


def test_backoff_is_capped_by_the_remaining_time() -> None:
    assert backoff_seconds(3, 5.0, 0.0) == pytest.approx(2.5)
    assert backoff_seconds(3, 5.0, 0.99) < 5.0


def test_retry_after_parses_seconds_and_dates() -> None:
    assert parse_retry_after("7", NOW) == 7.0
    assert parse_retry_after("1.5", NOW) == 1.5
    assert parse_retry_after("-3", NOW) == 0.0
    assert parse_retry_after(None, NOW) is None
    assert parse_retry_after("soon", NOW) is None
    date = "Tue, 14 Nov 2023 22:13:40 GMT"  # NOW + 20 s
    assert parse_retry_after(date, NOW) == pytest.approx(20.0)


def test_larger_retry_after_is_honoured() -> None:
    plan = plan_retry(retry_count=0, remaining=100.0, retry_after=10.0, rand=0.0, jitter=0.0)
    assert plan.delay == pytest.approx(10.0) and not plan.terminal


def test_smaller_retry_after_is_ignored() -> None:
    plan = plan_retry(retry_count=2, remaining=100.0, retry_after=1.0, rand=0.0, jitter=0.0)
    assert plan.delay == pytest.approx(8.0)


def test_retry_after_is_clamped_to_half_the_remaining_time_plus_jitter() -> None:
    plan = plan_retry(retry_count=0, remaining=40.0, retry_after=3600.0, rand=0.0, jitter=0.999)
    assert 20.0 <= plan.delay <= 25.0 and not plan.terminal


def test_no_time_left_is_terminal() -> None:
    assert plan_retry(retry_count=0, remaining=0.0, retry_after=None, rand=0.5, jitter=0).terminal
    assert plan_retry(retry_count=0, remaining=-1, retry_after=None, rand=0.5, jitter=0).terminal
