"""round-robin: one turn per active flow, FCFS within a flow, a ring over active flows."""

from __future__ import annotations

from sluiceway.flowcontrol import BandSettings, CapacityView, FlowController, FlowControlSettings
from sluiceway.flowcontrol import Request as R
from sluiceway.flowcontrol.fairness import RoundRobin

OPEN = CapacityView(0.0)


def make() -> FlowController:
    return FlowController(FlowControlSettings(default_band=BandSettings(fairness=RoundRobin())))


def test_turns_alternate_between_tenants_fcfs_inside() -> None:
    fc = make()
    for i in range(4):
        fc.add(R(f"a{i}", "a"), float(i))
    fc.add(R("b0", "b"), 5.0)
    fc.add(R("b1", "b"), 6.0)
    got = [d.request_id for d in fc.next_dispatches(7.0, OPEN).dispatched]
    assert got == ["a0", "b0", "a1", "b1", "a2", "a3"]


def test_flow_rejoins_at_the_tail_when_active_again() -> None:
    fc = make()
    fc.add(R("a0", "a"), 0.0)
    fc.add(R("b0", "b"), 0.0)
    fc.add(R("c0", "c"), 0.0)
    assert [d.request_id for d in fc.next_dispatches(1.0, OPEN, limit=1).dispatched] == ["a0"]
    fc.add(R("a1", "a"), 2.0)
    got = [d.request_id for d in fc.next_dispatches(3.0, OPEN).dispatched]
    assert got == ["b0", "c0", "a1"]


def test_flow_emptied_by_cancellation_leaves_the_ring() -> None:
    fc = make()
    fc.add(R("a0", "a"), 0.0)
    fc.add(R("b0", "b"), 0.0)
    fc.add(R("b1", "b"), 0.0)
    fc.on_cancelled("a0", 1.0)
    got = [d.request_id for d in fc.next_dispatches(2.0, OPEN).dispatched]
    assert got == ["b0", "b1"]
    fc.add(R("a1", "a"), 3.0)
    assert [d.request_id for d in fc.next_dispatches(4.0, OPEN).dispatched] == ["a1"]
