"""The overload order of one queue, with plain numbers: CoDel's trigger (a sojourn above the
target for a whole interval), the way back (an empty queue or a sojourn below the target) and
the switch that turns it off."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sluiceway.broker.peek_order import EARLIEST_DEADLINE, LATEST_DEADLINE, PeekOrder
from sluiceway.processor.overload_order import OverloadOrder

TARGET, INTERVAL = 5.0, 10.0


def feed(policy: OverloadOrder, samples: Sequence[tuple[float, float | None, int]]) -> PeekOrder:
    """Each (now, oldest sojourn, backlog) in turn; the order after the last one."""
    order = policy.order
    for now, sojourn, backlog in samples:
        order = policy.observe(now, sojourn, backlog)
    return order


def test_it_starts_in_deadline_order() -> None:
    policy = OverloadOrder(TARGET, INTERVAL)
    assert policy.enabled and policy.order is EARLIEST_DEADLINE


def test_a_sojourn_above_the_target_for_a_whole_interval_turns_it_newest_first() -> None:
    policy = OverloadOrder(TARGET, INTERVAL)
    assert policy.observe(100.0, 6.0, 50) is EARLIEST_DEADLINE  # above from t=100
    assert policy.observe(109.9, 16.0, 80) is EARLIEST_DEADLINE
    assert policy.above_for(109.9) == pytest.approx(9.9)
    assert policy.observe(110.0, 16.1, 90) is LATEST_DEADLINE
    assert policy.observe(111.0, 17.0, 95) is LATEST_DEADLINE  # it stays while above


def test_a_spike_does_not_flip_it_and_a_dip_restarts_the_interval() -> None:
    policy = OverloadOrder(TARGET, INTERVAL)
    spike = [(100.0, 30.0, 10), (101.0, 1.0, 10), (112.0, 1.0, 10)]
    assert feed(policy, spike) is EARLIEST_DEADLINE
    dip = [(120.0, 6.0, 10), (128.0, 14.0, 10), (129.0, 4.9, 10), (135.0, 6.0, 10)]
    assert feed(policy, dip) is EARLIEST_DEADLINE
    assert policy.above_for(135.0) == 0.0  # above again since 135, not since 120
    assert policy.observe(144.9, 15.9, 10) is EARLIEST_DEADLINE
    assert policy.observe(145.0, 16.0, 10) is LATEST_DEADLINE


def test_the_target_itself_counts_as_above() -> None:
    policy = OverloadOrder(TARGET, INTERVAL)
    assert feed(policy, [(0.0, 5.0, 3), (10.0, 5.0, 3)]) is LATEST_DEADLINE


@pytest.mark.parametrize(
    ("sojourn", "backlog"), [(1.0, 40), (4.99, 40), (60.0, 0), (None, 0)], ids=str
)
def test_it_returns_to_deadline_order_when_drained_or_below_the_target(
    sojourn: float | None, backlog: int
) -> None:
    policy = OverloadOrder(TARGET, INTERVAL)
    assert feed(policy, [(0.0, 6.0, 100), (10.0, 16.0, 100)]) is LATEST_DEADLINE
    assert policy.observe(11.0, sojourn, backlog) is EARLIEST_DEADLINE
    # and it takes a whole interval above the target to switch again
    assert policy.observe(12.0, 30.0, 100) is EARLIEST_DEADLINE
    assert policy.observe(22.0, 40.0, 100) is LATEST_DEADLINE


def test_an_unknown_sojourn_holds_the_state() -> None:
    """No live request seen (the head page was all past its deadline): not a drained queue."""
    newest_first = OverloadOrder(TARGET, INTERVAL)
    assert feed(newest_first, [(0.0, 6.0, 9), (10.0, 16.0, 9), (11.0, None, 9)]) is LATEST_DEADLINE
    counting = OverloadOrder(TARGET, INTERVAL)
    assert feed(counting, [(0.0, 6.0, 9), (5.0, None, 9), (10.0, 16.0, 9)]) is LATEST_DEADLINE


@pytest.mark.parametrize(("target", "interval"), [(0.0, 10.0), (5.0, 0.0), (0.0, 0.0)])
def test_a_zero_turns_the_adaptive_order_off(target: float, interval: float) -> None:
    policy = OverloadOrder(target, interval)
    assert not policy.enabled
    samples = [(float(t), 1000.0, 10_000) for t in range(0, 100, 5)]
    assert feed(policy, samples) is EARLIEST_DEADLINE
