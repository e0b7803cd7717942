"""Queue-wait budgets in two regimes (endpoints / empty pool), fresh budget on a change."""

from __future__ import annotations

from sluiceway.flowcontrol.base import FlowKey, Item, ItemState, Request
from sluiceway.flowcontrol.expiry import Expiry
from sluiceway.flowcontrol.flows import Flow

FLOW = Flow(FlowKey("t", 0), 0.0)


def item(rid: str, at: float, ttl: float, seq: int = 0) -> Item:
    return Item(Request(rid), FLOW, band=0, enqueue_time=at, ttl=ttl, seq=seq)


def test_due_with_endpoints_after_the_items_ttl() -> None:
    expiry = Expiry(empty_ttl=0.0)
    a, b = item("a", 0.0, 10.0, 0), item("b", 1.0, 10.0, 1)
    expiry.track(a)
    expiry.track(b)
    assert expiry.next_deadline() == 10.0
    assert expiry.due(9.9) == []
    assert expiry.due(10.0) == [a]
    assert expiry.next_deadline() == 11.0


def test_items_that_left_are_skipped() -> None:
    expiry = Expiry(empty_ttl=0.0)
    a = item("a", 0.0, 5.0)
    expiry.track(a)
    a.state = ItemState.IN_FLIGHT
    assert expiry.next_deadline() is None and expiry.due(100.0) == []


def test_a_regime_change_grants_a_fresh_budget() -> None:
    expiry = Expiry(empty_ttl=20.0)
    a = item("a", 0.0, 10.0)
    expiry.track(a)
    expiry.observe(8.0, pool_empty=True)
    assert expiry.due(21.0) == []  # the empty-pool budget counts from the change at 8
    assert expiry.due(28.0) == [a]


def test_zero_budget_disables_expiry_in_that_regime() -> None:
    expiry = Expiry(empty_ttl=0.0)
    expiry.track(item("a", 0.0, 10.0))
    expiry.observe(1.0, pool_empty=True)
    assert expiry.next_deadline() is None and expiry.due(1e9) == []
