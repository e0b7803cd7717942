"""The router's side of the ledger, without Redis: the view it builds, the eviction orders it
gives, and an order it receives."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from sluiceway.clock import VirtualClock
from sluiceway.flowcontrol import (
    BandSettings,
    CapacityView,
    EvictionSettings,
    FlowController,
    FlowControlSettings,
    Request,
)
from sluiceway.flowcontrol.base import EndpointSnapshot
from sluiceway.ledger.leases import LedgerSettings
from sluiceway.ledger.replicas import EvictionOrder, Victims
from sluiceway.ledger.share import LedgerView
from sluiceway.router.pool_ledger import PoolLedger


def controller() -> FlowController:
    bands = (BandSettings(100), BandSettings(-10))
    settings = FlowControlSettings(bands=bands, eviction=EvictionSettings(enabled=True))
    return FlowController(settings)


def pool_ledger(fc: FlowController, evicted: list[str]) -> PoolLedger:
    return PoolLedger(
        LedgerSettings("redis://127.0.0.1:1"),  # never started: no call goes out
        "p",
        VirtualClock(),
        fc,
        kick=lambda: None,
        evict=evicted.append,
        registry=CollectorRegistry(),
    )


async def test_the_view_holds_the_others_and_what_they_wait_for() -> None:
    pl = pool_ledger(controller(), [])
    pl.leases.view = LedgerView(others=4, live=2)
    pl.leases.others_waiting = {100: 2}
    base = CapacityView(0.3, request_cost=0.1)
    view = pl.view(base, 3, [EndpointSnapshot("e", inflight_requests=3)], 0.0)
    assert view.saturation == pytest.approx(0.7)
    assert view.waiting_elsewhere == ((100, 2),)
    assert pl.leases.cap == 10


async def test_held_back_with_no_victim_here_it_orders_one_elsewhere() -> None:
    fc = controller()
    pl = pool_ledger(fc, [])
    pl.leases.view = LedgerView(others=10, live=2)
    pl.leases.victims = (Victims("other", -10, 10),)
    fc.add(Request("rt", "t", 100), 0.0)
    cycle = fc.next_dispatches(0.0, CapacityView(1.0, request_cost=0.1))
    assert cycle.stopped_at == 100 and cycle.evict == []
    pl.after(cycle)
    assert pl.leases.blocked
    assert pl.leases._orders == [EvictionOrder("other", 100, 1)]
    pl.leases._orders.clear()
    pl.after(fc.next_dispatches(0.1, CapacityView(1.0, request_cost=0.1)))
    assert pl.leases._orders == []  # the first order is pending


async def test_an_order_for_this_replica_evicts_its_own() -> None:
    fc = controller()
    evicted: list[str] = []
    pl = pool_ledger(fc, evicted)
    for i in range(3):
        fc.add(Request(f"b{i}", "t", -10), 0.0)
    fc.next_dispatches(0.0, CapacityView(0.0, request_cost=0.1))
    pl._ordered(EvictionOrder("me", 100, 2))
    assert evicted == ["b2", "b1"]
