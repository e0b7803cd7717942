"""Rules of the flow controller: capacity, TTL regimes, cancellation, strict bands, dispatch
as many as capacity allows, band provisioning, shutdown, exactly-once finalization."""

from __future__ import annotations

import pytest

from sluiceway.flowcontrol import (
    BandSettings,
    CapacityView,
    DropReason,
    FlowController,
    FlowControlSettings,
    Outcome,
    Request,
)
from sluiceway.flowcontrol.base import ItemState
from sluiceway.flowcontrol.fairness import TokenFair

OPEN = CapacityView(0.0, request_cost=0.0)
CLOSED = CapacityView(1.0, request_cost=0.1)
EMPTY = CapacityView(1.0, pool_empty=True)


def slots(n: int, used: int = 0) -> CapacityView:
    """A pool of ``n`` slots with ``used`` busy (concurrency detector, requests mode)."""
    return CapacityView(used / n, request_cost=1.0 / n)


def req(rid: str, prio: int = 0, tenant: str = "t", size: int = 100, **kw: object) -> Request:
    return Request(rid, tenant, prio, size, **kw)  # type: ignore[arg-type]


def make(**kw: object) -> FlowController:
    return FlowController(FlowControlSettings(**kw))  # type: ignore[arg-type]


def ids(cycle: object) -> list[str]:
    return [d.request_id for d in cycle.dispatched]  # type: ignore[attr-defined]


# ---- capacity --------------------------------------------------------------------------


def test_band_request_cap_rejects_with_429_saturated_at_once() -> None:
    fc = make(bands=(BandSettings(100, max_requests=2),))
    assert fc.add(req("a", 100), 0.0) is None
    assert fc.add(req("b", 100), 0.0) is None
    done = fc.add(req("c", 100), 0.0)
    assert done is not None and done.outcome is Outcome.REJECTED_CAPACITY
    answer = done.http()
    assert answer is not None and (answer.status, answer.reason) == (429, DropReason.SATURATED)
    assert fc.add(req("d", 0), 0.0) is None  # other bands untouched


def test_band_byte_cap() -> None:
    fc = make(bands=(BandSettings(5, max_bytes=250),))
    assert fc.add(req("a", 5, size=200), 0.0) is None
    done = fc.add(req("b", 5, size=51), 0.0)
    assert done is not None and done.outcome is Outcome.REJECTED_CAPACITY
    assert fc.add(req("c", 5, size=50), 0.0) is None


def test_global_caps_span_bands() -> None:
    fc = make(max_requests=2, bands=(BandSettings(1),))
    fc.add(req("a", 1), 0.0)
    fc.add(req("b", 0), 0.0)
    done = fc.add(req("c", 1), 0.0)
    assert done is not None and done.outcome is Outcome.REJECTED_CAPACITY
    fc2 = make(max_bytes=150)
    fc2.add(req("a", size=100), 0.0)
    got = fc2.add(req("b", size=100), 0.0)
    assert got is not None and got.outcome is Outcome.REJECTED_CAPACITY


def test_capacity_full_while_pool_empty_is_503_no_endpoints() -> None:
    fc = make(bands=(BandSettings(0, max_requests=1),))
    fc.next_dispatches(0.0, EMPTY)
    fc.add(req("a"), 0.0)
    done = fc.add(req("b"), 0.0)
    assert done is not None and done.outcome is Outcome.REJECTED_NO_ENDPOINTS
    assert done.http() == done.http() and done.http().status == 503  # type: ignore[union-attr]


def test_duplicate_request_id_is_rejected_other() -> None:
    fc = make()
    fc.add(req("a"), 0.0)
    done = fc.add(req("a"), 0.0)
    assert done is not None and done.outcome is Outcome.REJECTED_OTHER


# ---- TTL regimes -----------------------------------------------------------------------


def test_ttl_expiry_with_endpoints_is_429_ttl_expired() -> None:
    fc = make(default_ttl=10.0)
    fc.add(req("a"), 0.0)
    assert fc.next_dispatches(9.99, CLOSED).dropped == []
    assert fc.next_deadline() == 10.0
    dropped = fc.next_dispatches(10.0, CLOSED).dropped
    assert [d.outcome for d in dropped] == [Outcome.EVICTED_TTL]
    answer = dropped[0].http()
    assert answer is not None and (answer.status, answer.reason) == (429, DropReason.TTL_EXPIRED)
    assert dropped[0].waited == 10.0
    assert fc.totals.queued == 0 and fc.totals.bytes == 0


def test_header_ttl_only_shortens() -> None:
    fc = make(default_ttl=10.0)
    fc.add(req("short", ttl=2.0), 0.0)
    fc.add(req("long", ttl=50.0), 0.0)
    assert [d.request_id for d in fc.next_dispatches(2.0, CLOSED).dropped] == ["short"]
    assert [d.request_id for d in fc.next_dispatches(10.0, CLOSED).dropped] == ["long"]


def test_header_ttl_applies_when_default_disabled() -> None:
    fc = make(default_ttl=0.0)
    fc.add(req("a", ttl=3.0), 0.0)
    fc.add(req("b"), 0.0)
    assert [d.request_id for d in fc.next_dispatches(1e6, CLOSED).dropped] == ["a"]


def test_no_endpoint_budget_and_fresh_budget_on_regime_change() -> None:
    fc = make(default_ttl=10.0, no_endpoint_ttl=100.0)
    fc.add(req("a"), 0.0)
    fc.next_dispatches(5.0, EMPTY)  # pool empties at 5: the 100 s budget runs from 5
    assert fc.next_dispatches(50.0, EMPTY).dropped == []
    fc.next_dispatches(60.0, CLOSED)  # endpoints back at 60: 10 s budget from 60
    assert fc.next_dispatches(69.0, CLOSED).dropped == []
    dropped = fc.next_dispatches(70.0, CLOSED).dropped
    assert [d.outcome for d in dropped] == [Outcome.EVICTED_TTL]


def test_no_endpoint_expiry_outcome() -> None:
    fc = make(default_ttl=10.0, no_endpoint_ttl=20.0)
    fc.next_dispatches(0.0, EMPTY)
    fc.add(req("a"), 1.0)
    dropped = fc.next_dispatches(21.0, EMPTY).dropped
    assert [d.outcome for d in dropped] == [Outcome.EVICTED_NO_ENDPOINTS]
    assert dropped[0].http().status == 503  # type: ignore[union-attr]


def test_zero_no_endpoint_ttl_never_expires_while_empty() -> None:
    fc = make(default_ttl=10.0, no_endpoint_ttl=0.0)
    fc.next_dispatches(0.0, EMPTY)
    fc.add(req("a"), 0.0)
    assert fc.next_dispatches(1e5, EMPTY).dropped == []


def test_ttl_evicted_while_pool_empty_maps_to_503() -> None:
    fc = make(default_ttl=10.0)
    fc.add(req("a"), 0.0)
    fc.next_dispatches(1.0, EMPTY)
    dropped = fc.next_dispatches(11.0, EMPTY).dropped  # no_endpoint_ttl follows default
    assert dropped[0].http().reason is DropReason.NO_ENDPOINTS  # type: ignore[union-attr]


# ---- cancellation, shutdown, exactly once ----------------------------------------------


def test_disconnect_removes_at_once_and_frees_capacity() -> None:
    fc = make(bands=(BandSettings(0, max_requests=1),))
    fc.add(req("a"), 0.0)
    done = fc.on_cancelled("a", 1.0)
    assert done is not None and done.outcome is Outcome.EVICTED_CONTEXT_CANCELLED
    assert done.http().reason is DropReason.CONTEXT_CANCELLED  # type: ignore[union-attr]
    assert fc.totals.queued == 0 and fc.band(0).queued == 0  # type: ignore[union-attr]
    assert fc.add(req("b"), 1.0) is None
    assert ids(fc.next_dispatches(2.0, OPEN)) == ["b"]


def test_finalized_once_whatever_races() -> None:
    fc = make(default_ttl=5.0)
    fc.add(req("a"), 0.0)
    assert ids(fc.next_dispatches(1.0, OPEN)) == ["a"]
    assert fc.on_cancelled("a", 2.0) is None  # in flight: treated as finished
    assert fc.next_dispatches(10.0, OPEN).dropped == []
    assert fc.on_cancelled("a", 3.0) is None and fc.on_finished("a", 3.0) is None
    assert fc.state_of("a") is None and fc.totals.inflight == 0


def test_shutdown_finalizes_queued_and_rejects_new() -> None:
    fc = make()
    fc.add(req("a"), 0.0)
    done = fc.shutdown(1.0)
    assert [d.outcome for d in done] == [Outcome.EVICTED_OTHER]
    assert done[0].http().reason is DropReason.SHUTTING_DOWN  # type: ignore[union-attr]
    late = fc.add(req("b"), 2.0)
    assert late is not None and late.outcome is Outcome.REJECTED_OTHER
    assert late.http().reason is DropReason.SHUTTING_DOWN  # type: ignore[union-attr]


# ---- dispatch --------------------------------------------------------------------------


def test_strict_bands_highest_first_and_many_per_cycle() -> None:
    fc = make(bands=(BandSettings(100), BandSettings(-5)))
    for i in range(3):
        fc.add(req(f"low{i}", -5), 0.0)
        fc.add(req(f"mid{i}", 0), 0.0)
        fc.add(req(f"hi{i}", 100), 0.0)
    cycle = fc.next_dispatches(1.0, slots(5))
    assert ids(cycle) == ["hi0", "hi1", "hi2", "mid0", "mid1"]
    assert cycle.stopped_at == 100  # head-of-line: the top band's ceiling is reached first
    assert fc.totals.inflight == 5 and fc.totals.queued == 4


def test_one_cycle_drains_a_backlog_when_capacity_frees() -> None:
    fc = make()
    for i in range(500):
        fc.add(req(f"r{i}"), 0.0)
    assert ids(fc.next_dispatches(0.0, CLOSED)) == []
    assert len(ids(fc.next_dispatches(1.0, slots(1000)))) == 500


def test_limit_caps_dispatches_per_call() -> None:
    fc = make()
    for i in range(5):
        fc.add(req(f"r{i}"), 0.0)
    assert ids(fc.next_dispatches(1.0, OPEN, limit=2)) == ["r0", "r1"]


def test_token_cost_counts_in_the_loop() -> None:
    fc = make()
    for i in range(4):
        fc.add(req(f"r{i}", prompt_tokens=100, max_tokens=150), 0.0)
    view = CapacityView(0.0, token_cost=1 / 1000)  # 250 tokens each: 4 fit under 1.0
    assert len(ids(fc.next_dispatches(1.0, view))) == 4
    fc2 = make()
    for i in range(5):
        fc2.add(req(f"r{i}", prompt_tokens=100, max_tokens=150), 0.0)
    assert len(ids(fc2.next_dispatches(1.0, view))) == 4


def test_nothing_dispatches_while_pool_empty() -> None:
    fc = make()
    fc.add(req("a"), 0.0)
    assert ids(fc.next_dispatches(1.0, CapacityView(0.0, pool_empty=True))) == []


def test_unknown_priority_falls_back_to_band_zero() -> None:
    fc = make(bands=(BandSettings(10),))
    fc.add(req("x", 42), 0.0)
    assert fc.band(0).queued == 1  # type: ignore[union-attr]
    done = ids(fc.next_dispatches(1.0, OPEN))
    assert done == ["x"]


def test_set_priorities_provisions_from_templates_and_removes_idle() -> None:
    neg = BandSettings(max_requests=1)
    fc = make(default_negative_band=neg)
    fc.set_priorities([7, -3])
    assert [b.priority for b in fc.bands] == [7, 0, -3]
    assert fc.band(-3).settings.max_requests == 1  # type: ignore[union-attr]
    fc.add(req("a", 7), 0.0)
    fc.set_priorities([-3])
    assert [b.priority for b in fc.bands] == [7, 0, -3]  # 7 still busy
    fc.on_cancelled("a", 1.0)
    fc.set_priorities([])
    assert [b.priority for b in fc.bands] == [0]


def test_idle_flows_are_collected_after_the_gc_timeout() -> None:
    fc = make(flow_gc_timeout=100.0)
    fc.next_dispatches(0.0, OPEN)
    fc.add(req("a", tenant="t1"), 1.0)
    fc.next_dispatches(1.0, OPEN)
    fc.on_finished("a", 2.0)
    assert "t1" in fc.band(0).flows  # type: ignore[union-attr]
    fc.next_dispatches(150.0, OPEN)
    fc.next_dispatches(250.0, OPEN)
    assert "t1" not in fc.band(0).flows  # type: ignore[union-attr]


def test_state_of_follows_the_lifecycle() -> None:
    fc = make()
    fc.add(req("a"), 0.0)
    assert fc.state_of("a") is ItemState.QUEUED
    fc.next_dispatches(0.0, OPEN)
    assert fc.state_of("a") is ItemState.IN_FLIGHT
    fc.on_finished("a", 1.0)
    assert fc.state_of("a") is None


class _Sloppy:
    """A usage-limit policy breaking the contract: too few ceilings, increasing ones."""

    name = "sloppy"

    def __init__(self, values: list[float]) -> None:
        self.values = values

    def ceilings(self, view: object) -> list[float]:
        return self.values


def test_ceilings_are_padded_open_and_made_non_increasing() -> None:
    bands = (BandSettings(2), BandSettings(1))
    short = make(bands=bands, usage_limit=_Sloppy([0.5]))
    assert list(short.next_dispatches(0.0, OPEN).ceilings) == [0.5, 0.5, 0.5]
    rising = make(bands=bands, usage_limit=_Sloppy([0.2, 0.9, 0.4]))
    assert list(rising.next_dispatches(0.0, OPEN).ceilings) == [0.2, 0.2, 0.2]


# ---- demand waiting on other router replicas ---------------------------------------------


def test_room_waited_for_elsewhere_in_a_higher_band_is_left_free() -> None:
    fc = make(bands=(BandSettings(100), BandSettings(30), BandSettings(-10)))
    for i in range(5):
        fc.add(req(f"low{i}", -10), 0.0)
        fc.add(req(f"mid{i}", 30), 0.0)
    # 10 slots, 4 used; another replica waits for 3 in band 100 and 1 in band 30
    view = CapacityView(0.4, request_cost=0.1, waiting_elsewhere=((100, 3), (30, 1)))
    cycle = fc.next_dispatches(1.0, view)
    # 6 free: 3 kept for band 100; band 30 takes the other 3; band -10 must also leave the
    # band 30 one waiting elsewhere, so nothing is left for it
    assert ids(cycle) == ["mid0", "mid1", "mid2"]
    assert view.reserved_above(30) == pytest.approx(0.3)
    assert view.reserved_above(-10) == pytest.approx(0.4)
    again = fc.next_dispatches(2.0, CapacityView(0.4, request_cost=0.1))
    assert len(again.dispatched) == 6  # nothing waits elsewhere: all the room is used


def test_room_owed_to_tenants_elsewhere_in_the_same_band_is_left_free() -> None:
    fc = make(bands=(BandSettings(30), BandSettings(-10)))
    for i in range(5):
        fc.add(req(f"mid{i}", 30), 0.0)
        fc.add(req(f"low{i}", -10), 0.0)
    # 10 slots, 6 used; this replica's tenants had their share of band 30: it leaves the 2
    # requests of the poorer replica room, and takes the other 2
    view = CapacityView(0.6, request_cost=0.1, fair_reserve=((30, 2),))
    assert view.elsewhere and view.reserved_above(30) == pytest.approx(0.2)
    assert view.reserved_above(-10) == 0.0  # fairness inside band 30 only
    assert ids(fc.next_dispatches(1.0, view)) == ["mid0", "mid1"]


def test_a_band_counts_the_fairness_charge_in_flight() -> None:
    fc = make(bands=(BandSettings(0, fairness=TokenFair()),))
    for i in range(3):
        fc.add(req(f"r{i}", prompt_tokens=100, max_tokens=50), 0.0)
    fc.next_dispatches(0.0, OPEN)
    band = fc.band(0)
    assert band is not None and band.charge == pytest.approx(3 * (100 + 2 * 50))
    fc.on_finished("r0", 1.0)
    assert band.charge == pytest.approx(2 * 200)
    fc.on_finished("r1", 1.0)
    fc.on_finished("r2", 1.0)
    assert band.charge == 0.0
