"""The split of a pool-wide in-flight target among live processors: the parts add up to what
one processor would hold, whatever the budget, the workers and the number of processors."""

from __future__ import annotations

import math

import pytest

from sluiceway.gates.base import budget_allows
from sluiceway.gates.pool_share import SOLE, PoolShare, in_flight_target


def shares(live: int) -> list[PoolShare]:
    return [PoolShare(live, rank) for rank in range(live)]


@pytest.mark.parametrize("live", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("workers", [1, 4, 12, 16])
def test_the_parts_add_up_to_one_processors_target(live: int, workers: int) -> None:
    for step in range(100):
        budget = step / 100
        parts = [in_flight_target(budget, workers, share) or 0 for share in shares(live)]
        assert sum(parts) == math.ceil(budget * workers)
        assert max(parts) - min(parts) <= 1  # as even as integers allow


def test_alone_the_target_is_unchanged() -> None:
    assert [in_flight_target(b, 16) for b in (0.0, 0.01, 0.25, 0.5, 0.99)] == [0, 1, 4, 8, 16]
    assert in_flight_target(0.25, 16, SOLE) == in_flight_target(0.25, 16, PoolShare(1, 0))
    assert budget_allows(0.25, 3, 16) and not budget_allows(0.25, 4, 16)


def test_a_full_budget_sets_no_cap_for_any_share() -> None:
    assert in_flight_target(1.0, 16) is None
    assert in_flight_target(1.0, 16, PoolShare(3, 2)) is None
    assert budget_allows(1.0, 1000, 16, PoolShare(3, 2))


def test_the_lower_ranks_take_the_remainder() -> None:
    # the guide's Scenario C: SAT_CAP 4 of 16 workers is budget 0.25 -> 4 in flight pool-wide
    assert [in_flight_target(0.25, 16, s) for s in shares(3)] == [2, 1, 1]
    assert [in_flight_target(0.25, 16, s) for s in shares(2)] == [2, 2]
    assert [in_flight_target(0.01, 16, s) for s in shares(2)] == [1, 0]
    assert not budget_allows(0.25, 1, 16, PoolShare(3, 1))
    assert budget_allows(0.25, 1, 16, PoolShare(3, 0))


def test_a_negative_budget_admits_nothing() -> None:
    assert [in_flight_target(-0.5, 16, s) for s in shares(2)] == [0, 0]


@pytest.mark.parametrize(("live", "rank"), [(0, 0), (2, 2), (2, -1)])
def test_a_rank_outside_the_live_members_is_refused(live: int, rank: int) -> None:
    with pytest.raises(ValueError):
        PoolShare(live, rank)
