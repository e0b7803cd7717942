"""The router's side of the ledger, without Redis: the view it builds, the eviction orders it
gives, and an order it receives."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from sluiceway.clock import VirtualClock
from sluiceway.config.router import load_endpoint_picker_config
from sluiceway.demo.stack import router_document
from sluiceway.flowcontrol import (
    BandSettings,
    CapacityView,
    EvictionSettings,
    FlowController,
    FlowControlSettings,
    Request,
)
from sluiceway.flowcontrol.base import EndpointSnapshot, Finalized, Outcome
from sluiceway.flowcontrol.configure import configure
from sluiceway.flowcontrol.fairness import RoundRobin
from sluiceway.ledger.fair_share import BandDemand, tenant_tag
from sluiceway.ledger.leases import LedgerSettings
from sluiceway.ledger.replicas import EvictionOrder, Victims
from sluiceway.ledger.share import LedgerView
from sluiceway.router.exchange import Exchange
from sluiceway.router.flow import RouterFlow
from sluiceway.router.metrics import RouterMetrics
from sluiceway.router.pool import EndpointPool
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


def router_flow(live: dict[str, Exchange]) -> RouterFlow:
    """The demo's evictable router over one endpoint, with a ledger that never answers."""
    config = load_endpoint_picker_config(router_document("router-evictable.yaml")).value
    clock = VirtualClock()
    pool = EndpointPool(("http://e",), clock)
    pool.mark("http://e", True)
    return RouterFlow(
        configure(config), clock, pool, RouterMetrics("p"), live, LedgerSettings("redis://x:1")
    )


async def test_a_request_cut_between_dispatch_and_its_handler_gives_its_lease_back() -> None:
    """Evicted or left after a cycle dispatched it and before its handler ran again: the lease
    it was given (or is waiting for) goes back, or the replica's share leaks away."""
    live: dict[str, Exchange] = {}
    flow = router_flow(live)
    assert flow.ledger is not None
    leases = flow.ledger.leases
    for granted in (False, True):
        ex = Exchange("r", model="")
        live["r"] = ex
        done = Finalized("r", Outcome.DISPATCHED, "t", -10, -10, 0.0)
        flow._assign(done)
        assert ex.lease is not None and leases.waiting == 1
        if granted:  # as a sync would
            leases._waiting.grant({-10: 1})
            leases.held, leases.bands[-10] = 1, 1
        flow._interrupted(ex, ("t", "-10", "p", "", ""))
        assert leases.waiting == 0 and leases.held == 0 and ex.lease is None
        assert leases.bands[-10] == 0  # no phantom victim left for the other replicas
        assert ex.member is None


async def test_a_replica_ahead_of_another_in_a_band_leaves_it_room() -> None:
    shared = BandSettings(30, fairness=RoundRobin())
    fc = FlowController(FlowControlSettings(bands=(shared, BandSettings(0))))
    pl = pool_ledger(fc, [])
    for i in range(8):
        fc.add(Request(f"a{i}", "team-a", 30), 0.0)
        fc.add(Request(f"s{i}", "strict", 0), 0.0)
    fc.next_dispatches(0.0, CapacityView(0.0, request_cost=0.1, stages=()), limit=6)
    assert pl._fair() == [BandDemand(30, 6.0, 2, (tenant_tag("team-a"),))]  # band 0: strict
    pl.leases.view = LedgerView(others=2, live=2)
    pl.leases.others_waiting = {30: 3}
    pl.leases.others_demand = (BandDemand(30, 2.0, 3, (tenant_tag("team-b"),)),)
    view = pl.view(CapacityView(0.8, request_cost=0.1), 6, [], 0.0)
    assert view.fair_reserve == ((30, 3),)
    # when the other replica has caught up, nothing is owed
    pl.leases.others_demand = (BandDemand(30, 6.0, 3, (tenant_tag("team-b"),)),)
    assert pl.view(CapacityView(0.8, request_cost=0.1), 6, [], 0.0).fair_reserve == ()


async def test_a_request_whose_queue_budget_runs_out_waiting_for_its_lease_is_not_sent() -> None:
    """Waiting for a lease is queueing: past its budget the request could not finish, so it is
    answered as expired in the queue instead of going upstream late."""
    live: dict[str, Exchange] = {}
    flow = router_flow(live)
    assert flow.ledger is not None and flow.adapter is not None
    ex = Exchange("r", model="")
    live["r"] = ex
    flow._assign(Finalized("r", Outcome.DISPATCHED, "t", -10, -10, 0.0))
    assert ex.lease is not None and not ex.lease.done()  # no call ever grants it
    ex.budget, ex.waited = 1.05, 1.0  # 50 ms of budget left
    answer = await asyncio.wait_for(flow._leased(flow.adapter, ex), 5)
    assert answer is not None and answer.status == 429
    assert dict(answer.headers)["x-llm-d-request-dropped-reason"] == "rejected-ttl-expired"
    assert flow.ledger.leases.waiting == 0 and ex.lease is None
