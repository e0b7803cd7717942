"""global-strict: the band is one queue in ordering order, across tenants."""

from __future__ import annotations

from sluiceway.flowcontrol import BandSettings, CapacityView, FlowController, FlowControlSettings
from sluiceway.flowcontrol import Request as R
from sluiceway.flowcontrol.fairness import GlobalStrict

OPEN = CapacityView(0.0)


def test_one_logical_queue_lets_a_tenant_starve_others() -> None:
    fc = FlowController(FlowControlSettings(bands=(BandSettings(0, fairness=GlobalStrict()),)))
    for i in range(3):
        fc.add(R(f"hog{i}", "hog"), float(i))
    fc.add(R("meek", "meek"), 10.0)
    got = [d.request_id for d in fc.next_dispatches(11.0, OPEN, limit=3).dispatched]
    assert got == ["hog0", "hog1", "hog2"]


def test_cancelled_items_are_skipped_and_compacted() -> None:
    fc = FlowController(FlowControlSettings(default_ttl=0.0))
    for i in range(200):
        fc.add(R(f"r{i}"), float(i))
    for i in range(0, 200, 2):
        fc.on_cancelled(f"r{i}", 300.0)
    got = [d.request_id for d in fc.next_dispatches(301.0, OPEN).dispatched]
    assert got == [f"r{i}" for i in range(1, 200, 2)]
