"""In-flight eviction: trigger, victims, sizing, stop-and-wait pacing, confirmation,
timeouts and over-evictions."""

from __future__ import annotations

from sluiceway.flowcontrol import (
    BandSettings,
    CapacityView,
    EvictionSettings,
    FlowController,
    FlowControlSettings,
    Request,
)
from sluiceway.flowcontrol.eviction import evictions_needed
from sluiceway.flowcontrol.usage import StaticUsageLimit


def slots(n: int, used: int) -> CapacityView:
    return CapacityView(used / n, request_cost=1.0 / n)


def make(threshold: float = 1.0, **evict: object) -> FlowController:
    settings = FlowControlSettings(
        bands=(BandSettings(100), BandSettings(30), BandSettings(-5), BandSettings(-10)),
        usage_limit=StaticUsageLimit(threshold),
        eviction=EvictionSettings(enabled=True, **evict),  # type: ignore[arg-type]
    )
    return FlowController(settings)


def fill(fc: FlowController, plan: list[tuple[str, int]], pool: int) -> None:
    """Dispatch ``plan`` (id, priority) one per cycle, in order, as if the pool were idle
    (e.g. before a ceiling applied, or behind a lagging sensor)."""
    for i, (rid, prio) in enumerate(plan):
        fc.add(Request(rid, "t", prio), float(i))
        assert len(fc.next_dispatches(float(i), slots(pool, 0), limit=1).dispatched) == 1


def test_sizing_accounts_for_ge_gating() -> None:
    assert evictions_needed(0.1, 0.05) == 3  # 1.0 - 0.9 with 20 slots
    assert evictions_needed(1.0 - 0.9, 1 / 20) == 3  # float noise does not change it
    assert evictions_needed(0.0, 0.05) == 1
    assert evictions_needed(0.07, 0.05) == 2


def test_minimal_case_evicts_exactly_three() -> None:
    fc = make(threshold=0.9, max_per_decision=5, grace=0.0)
    fill(fc, [(f"b{i}", -10) for i in range(20)], pool=20)
    fc.add(Request("rt", "rt", 100), 30.0)
    cycle = fc.next_dispatches(30.0, slots(20, 20))
    assert cycle.dispatched == [] and len(cycle.evict) == 3
    assert cycle.evict == ["b19", "b18", "b17"]  # newest first
    for i, rid in enumerate(cycle.evict):
        rev = fc.on_finished(rid, 30.1 + i / 100)
        assert rev is not None and rev.outcome == "confirmed" and not rev.over_eviction
    after = fc.next_dispatches(31.0, slots(20, 17))
    assert [d.request_id for d in after.dispatched] == ["rt"] and after.evict == []
    assert fc.evictor.issued == 3 and fc.evictor.over_evictions == 0


def test_minimal_case_with_upstream_cap_takes_two_rounds_and_still_three() -> None:
    fc = make(threshold=0.9, max_per_decision=2, grace=0.5)
    fill(fc, [(f"b{i}", -10) for i in range(20)], pool=20)
    fc.add(Request("rt", "rt", 100), 30.0)
    first = fc.next_dispatches(30.0, slots(20, 20)).evict
    assert len(first) == 2
    assert fc.next_dispatches(30.005, slots(20, 20)).evict == []  # outstanding: wait
    for rid in first:
        fc.on_finished(rid, 30.01)
    assert fc.next_dispatches(30.2, slots(20, 18)).evict == []  # cooling (grace)
    second = fc.next_dispatches(30.6, slots(20, 18)).evict
    assert len(second) == 1
    fc.on_finished(second[0], 30.7)
    assert [d.request_id for d in fc.next_dispatches(30.7, slots(20, 17)).dispatched] == ["rt"]
    assert fc.evictor.issued == 3


def test_victims_lowest_priority_first_newest_first_never_non_negative() -> None:
    fc = make(threshold=0.5, max_per_decision=10, grace=0.0)
    plan = [("r30", 30), ("a1", -5), ("b1", -10), ("a2", -5), ("b2", -10), ("z0", 0)]
    fill(fc, plan, pool=6)
    fc.add(Request("rt", "rt", 100), 10.0)
    # Saturation 1.0 against 0.5 asks for 4 evictions: exactly the four negative ones.
    assert fc.next_dispatches(10.0, slots(6, 6)).evict == ["b2", "b1", "a2", "a1"]
    for rid in ("b2", "b1", "a2", "a1"):
        fc.on_finished(rid, 10.1)
    fc.add(Request("rt2", "rt", 100), 10.2)
    assert fc.next_dispatches(10.2, slots(6, 6)).evict == []  # 30 and 0 are never victims


def test_no_eviction_without_strictly_higher_demand() -> None:
    fc = make(grace=0.0)
    fill(fc, [(f"b{i}", -10) for i in range(4)], pool=4)
    fc.add(Request("peer", "t", -10), 10.0)
    assert fc.next_dispatches(10.0, slots(4, 4)).evict == []
    fc2 = make(grace=0.0)
    fill(fc2, [(f"a{i}", -5) for i in range(4)], pool=4)
    fc2.add(Request("lower", "t", -10), 10.0)  # demand below the victims
    assert fc2.next_dispatches(10.0, slots(4, 4)).evict == []
    fc2.add(Request("async", "t", -5), 10.0)  # same band as the victims
    assert fc2.next_dispatches(10.0, slots(4, 4)).evict == []


def test_disabled_eviction_never_evicts() -> None:
    fc = FlowController(FlowControlSettings(bands=(BandSettings(100), BandSettings(-10))))
    fill(fc, [(f"b{i}", -10) for i in range(3)], pool=3)
    fc.add(Request("rt", "rt", 100), 10.0)
    assert fc.next_dispatches(10.0, slots(3, 3)).evict == []


def test_timeout_counts_and_reopens_the_gate() -> None:
    fc = make(timeout=5.0, grace=0.5)
    fill(fc, [(f"b{i}", -10) for i in range(4)], pool=4)
    fc.add(Request("rt", "rt", 100), 10.0)
    assert fc.next_dispatches(10.0, slots(4, 4)).evict == ["b3"]
    assert fc.next_deadline() == 15.0
    assert fc.next_dispatches(14.9, slots(4, 4)).evict == []
    assert fc.next_dispatches(15.0, slots(4, 4)).evict == []  # timed out, now cooling
    assert fc.evictor.timed_out == 1
    assert fc.next_dispatches(15.6, slots(4, 4)).evict == ["b2"]
    assert fc.on_finished("b3", 16.0) is None  # a late end of a timed-out one is ignored


def test_over_eviction_counted_when_demand_already_left() -> None:
    fc = make(grace=0.0)
    fill(fc, [(f"b{i}", -10) for i in range(4)], pool=4)
    fc.add(Request("rt", "rt", 100), 10.0)
    assert fc.next_dispatches(10.0, slots(4, 4)).evict == ["b3"]
    fc.on_finished("b0", 10.01)  # natural churn frees a slot first
    assert [d.request_id for d in fc.next_dispatches(10.01, slots(4, 3)).dispatched] == ["rt"]
    rev = fc.on_finished("b3", 10.02)
    assert rev is not None and rev.over_eviction and fc.evictor.over_evictions == 1


def test_pending_debit_suppresses_new_decisions() -> None:
    fc = make(grace=1.0)
    fill(fc, [(f"b{i}", -10) for i in range(4)], pool=4)
    fc.add(Request("rt", "rt", 100), 10.0)
    fc.add(Request("rt2", "rt", 100), 10.0)
    ev = fc.next_dispatches(10.0, slots(4, 4)).evict
    assert ev == ["b3"]
    assert fc.evictor.pending() == 0.25
    fc.on_finished("b3", 10.1)
    assert fc.evictor.pending() == 0.25  # cooling
    fc.next_dispatches(10.1, slots(4, 3))  # rt dispatches
    assert fc.next_dispatches(10.2, slots(4, 4)).evict == []
    assert fc.next_dispatches(11.2, slots(4, 4)).evict == ["b2"]


def test_deadline_never_left_in_the_past_once_nothing_is_gated() -> None:
    # The adapter's timer sleeps until next_deadline() and then runs a cycle. A cooling debit
    # (or a timeout) must be released by that cycle even when no band is gated any more, or
    # the deadline stays in the past and the timer spins without ever yielding.
    fc = make(threshold=0.9, max_per_decision=5, grace=0.5)
    fill(fc, [(f"b{i}", -10) for i in range(20)], pool=20)
    fc.add(Request("rt", "rt", 100), 30.0)
    evicted = fc.next_dispatches(30.0, slots(20, 20)).evict
    for rid in evicted:
        fc.on_finished(rid, 30.1)
    assert [d.request_id for d in fc.next_dispatches(30.1, slots(20, 10)).dispatched] == ["rt"]
    deadline = fc.next_deadline()
    assert deadline is not None
    cycle = fc.next_dispatches(deadline, slots(20, 10))
    assert cycle.stopped_at is None
    after = fc.next_deadline()
    assert after is None or after > deadline


def test_unconfirmed_revocation_times_out_even_when_nothing_is_gated() -> None:
    fc = make(threshold=0.9, max_per_decision=5, grace=0.0, timeout=1.0)
    fill(fc, [(f"b{i}", -10) for i in range(20)], pool=20)
    fc.add(Request("rt", "rt", 100), 30.0)
    assert len(fc.next_dispatches(30.0, slots(20, 20)).evict) == 3
    fc.next_dispatches(30.5, slots(20, 10))  # demand served; evicted streams never end
    fc.next_dispatches(31.5, slots(20, 10))
    assert fc.evictor.timed_out == 3
    assert fc.next_deadline() is None


def test_victim_candidates_of_finished_requests_do_not_pile_up() -> None:
    # Sheddable traffic that finishes normally, with no head-of-line stop to pop it: the
    # candidate heap must stay about the size of what is in flight, not of all history.
    fc = make(threshold=0.9)
    for i in range(5_000):
        fc.add(Request(f"s{i}", "t", -10), float(i))
        assert len(fc.next_dispatches(float(i), slots(20, 0), limit=1).dispatched) == 1
        fc.on_finished(f"s{i}", i + 0.5)
    assert len(fc.evictor._victims) <= 256


def test_an_order_from_another_replica_evicts_lowest_band_newest_first() -> None:
    fc = make(grace=0.0)
    fill(fc, [("x5", -5), ("x10a", -10), ("x10b", -10), ("k30", 30)], pool=10)
    assert fc.evict_for(2, 100, 10.0) == ["x10b", "x10a"]
    assert fc.evict_for(5, -5, 10.0) == []  # only bands below the demand
    assert fc.evict_for(5, 100, 10.0) == ["x5"]  # band 30 is never a victim
    rev = fc.on_finished("x10b", 10.1)
    # confirmed, no over-eviction (the demand is the other replica's), no local cooling
    assert rev is not None and rev.remote and not rev.over_eviction
    assert fc.evictor.pending() == 0.0


def test_without_eviction_an_order_evicts_nothing() -> None:
    settings = FlowControlSettings(bands=(BandSettings(100), BandSettings(-10)))
    fc = FlowController(settings)
    fc.add(Request("x", "t", -10), 0.0)
    fc.next_dispatches(0.0, slots(10, 0))
    assert fc.evict_for(1, 100, 1.0) == []
