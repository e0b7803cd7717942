"""The ledger's arithmetic: other replicas' requests in the view, the pool-wide cap, the local
share while Redis is away and the rebuild after it."""

from __future__ import annotations

import pytest

from sluiceway.flowcontrol.base import CapacityView, EndpointSnapshot
from sluiceway.flowcontrol.saturation import ConcurrencyDetector
from sluiceway.ledger.replicas import UNBOUNDED
from sluiceway.ledger.share import LedgerView, pool_cap, with_others

C = 10
LEASE = 3.0


def concurrency_view(requests: int) -> CapacityView:
    """One endpoint of maxConcurrency C holding ``requests``."""
    detector = ConcurrencyDetector(max_concurrency=C)
    return detector.view([EndpointSnapshot("e", inflight_requests=requests)], 0.0)


@pytest.mark.parametrize(("own", "others"), [(0, 0), (3, 4), (6, 4), (2, 9), (0, 10)])
def test_the_cap_is_the_pool_whatever_the_split(own: int, others: int) -> None:
    ledger = LedgerView(others=others, live=2)
    view = with_others(concurrency_view(own), own, own, ledger, 0.0)
    assert view.saturation == pytest.approx((own + others) / C)
    assert pool_cap(view, own, own, ledger, 0.0) == C


def test_readings_and_ledger_count_a_request_once() -> None:
    # the endpoint reading already shows 5 requests beyond this replica's 2; the ledger says
    # the others hold 4: the larger (5) counts, not 9
    own, measured = 2, 7
    view = with_others(concurrency_view(measured), own, measured, LedgerView(4, 2), 0.0)
    assert view.saturation == pytest.approx(7 / C)
    # the ledger knows more than the (older) reading: its count wins
    view = with_others(concurrency_view(measured), own, measured, LedgerView(8, 2), 0.0)
    assert view.saturation == pytest.approx(10 / C)
    assert pool_cap(view, own, measured, LedgerView(8, 2), 0.0) == C


def test_stages_move_with_the_saturation() -> None:
    base = CapacityView(0.2, request_cost=0.1, stages=(("decode", 0.2), ("effective", 0.2)))
    view = with_others(base, 0, 0, LedgerView(3, 2), 0.0)
    assert dict(view.stages) == pytest.approx({"decode": 0.5, "effective": 0.5})


def test_tokens_mode_has_no_request_cap() -> None:
    view = CapacityView(0.5, token_cost=0.001)
    assert pool_cap(view, 1, 1, LedgerView(), 0.0) == UNBOUNDED


def test_an_empty_pool_is_left_alone() -> None:
    view = CapacityView(1.0, pool_empty=True, request_cost=0.1)
    assert with_others(view, 0, 0, LedgerView(5, 2), 0.0) is view


def test_away_a_replica_admits_its_share_never_the_pool() -> None:
    lost = LedgerView(others=5, live=2).lost(now=100.0, lease=LEASE)
    assert not lost.connected
    # within the lease the others' last count applies (they may still hold it)
    assert lost.others_for(own=2, now=101.0) == 5
    assert lost.others_for(own=7, now=101.0) == 7
    # after it, the share alone: each other replica as much as this one
    aged = lost.aged(now=100.0 + LEASE)
    assert aged.others == 0
    assert aged.others_for(own=4, now=104.0) == 4
    three = LedgerView(others=6, live=3).lost(0.0, LEASE).aged(LEASE)
    for own in range(C + 1):  # the view stops dispatching at own = C / 3
        view = with_others(concurrency_view(own), own, own, three, LEASE)
        assert (view.saturation < 1.0) == (own < 4)


def test_under_a_share_each_dispatch_counts_once_per_replica() -> None:
    # a cycle adds request_cost per dispatch: with the share it must stop at C / 2, not at C
    away = LedgerView(others=0, live=2).lost(0.0, LEASE).aged(LEASE)
    view = with_others(concurrency_view(3), 3, 3, away, LEASE)
    assert view.request_cost == pytest.approx(2 / C)
    dispatched = 0
    sat = view.saturation
    while sat < 1.0 - 1e-9:
        sat += view.request_cost
        dispatched += 1
    assert 3 + dispatched == C // 2
    assert pool_cap(view, 3, 3, away, LEASE) == C


def test_the_first_replica_back_does_not_take_the_pool() -> None:
    back = LedgerView(others=5, live=3).lost(0.0, LEASE).synced(0, 1, now=10.0, lease=LEASE)
    assert back.connected
    # an empty (restarted) Redis: the others have not stated their leases yet
    assert back.others_for(own=3, now=10.5) == 6
    # all three are back: the ledger's count is exact again
    full = back.synced(4, 3, now=10.6, lease=LEASE)
    assert full.others_for(own=3, now=10.6) == 4
    assert full.expected == 0
    # one never comes back: after a lease time it is gone
    partial = back.synced(2, 2, now=11.0, lease=LEASE)
    assert partial.others_for(own=3, now=11.0) == 6
    assert partial.synced(2, 2, now=13.1, lease=LEASE).others_for(own=3, now=13.1) == 2


def test_aging_leaves_a_connected_view_alone() -> None:
    view = LedgerView(others=3, live=2)
    assert view.aged(1e9) is view
