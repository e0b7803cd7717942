"""Eviction orders to other replicas: lowest band first, no more than the waiting demand, not
again while earlier ones are pending, again once they lapse."""

from __future__ import annotations

from sluiceway.ledger.remote_eviction import RemoteEviction
from sluiceway.ledger.replicas import EvictionOrder, Victims

VICTIMS = (Victims("a", -5, 3), Victims("b", -10, 2), Victims("a", -10, 1))


def test_lowest_band_first_and_only_as_many_as_wait() -> None:
    remote = RemoteEviction(timeout=10.0)
    orders = remote.decide(0.0, 100, 4, VICTIMS)
    assert sorted(orders, key=lambda o: o.member) == [
        EvictionOrder("a", 100, 2),  # its -10 one, then one -5
        EvictionOrder("b", 100, 2),
    ]
    assert remote.pending == 4


def test_no_second_order_while_the_first_is_pending_then_again_after_it_lapses() -> None:
    remote = RemoteEviction(timeout=10.0)
    assert remote.decide(0.0, 100, 2, VICTIMS)
    assert remote.decide(1.0, 100, 2, VICTIMS) == []
    assert remote.decide(1.0, 100, 3, VICTIMS) == [EvictionOrder("a", 100, 1)]
    remote.served(2)
    assert remote.pending == 1
    assert sum(o.count for o in remote.decide(11.5, 100, 2, VICTIMS)) == 2  # both lapsed


def test_only_bands_below_the_demand_and_below_zero() -> None:
    remote = RemoteEviction(timeout=10.0)
    assert remote.decide(0.0, -5, 5, VICTIMS) == [
        EvictionOrder("a", -5, 1),  # the -10 ones only; a before b in a tie
        EvictionOrder("b", -5, 2),
    ]
    assert RemoteEviction(timeout=1.0).decide(0.0, -10, 5, VICTIMS) == []


def test_at_most_per_decision() -> None:
    remote = RemoteEviction(timeout=10.0, most=1)
    assert remote.decide(0.0, 100, 5, VICTIMS) == [EvictionOrder("a", 100, 1)]
