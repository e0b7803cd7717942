from __future__ import annotations

from sluiceway.flowcontrol import BandSettings, CapacityView, FlowController, FlowControlSettings
from sluiceway.flowcontrol import Request as R
from sluiceway.flowcontrol.base import OrderingPolicy
from sluiceway.flowcontrol.ordering import EDF, FCFS, SLODeadline, ordering_by_name


def order(policy: OrderingPolicy, reqs: list[tuple[R, float]]) -> list[str]:
    band = BandSettings(ordering=policy)
    fc = FlowController(FlowControlSettings(default_band=band, default_ttl=60.0))
    for req, at in reqs:
        fc.add(req, at)
    now = max(at for _, at in reqs)
    return [d.request_id for d in fc.next_dispatches(now, CapacityView(0.0)).dispatched]


def test_fcfs_by_enqueue_time() -> None:
    assert order(FCFS(), [(R("b"), 2.0), (R("a"), 1.0)]) == ["a", "b"]


def test_edf_by_enqueue_plus_ttl() -> None:
    reqs = [(R("late", ttl=50.0), 0.0), (R("soon", ttl=5.0), 1.0), (R("nottl"), 0.5)]
    assert order(EDF(), reqs) == ["soon", "late", "nottl"]


def test_slo_deadline_by_received_plus_slo_missing_last() -> None:
    reqs = [
        (R("none", received_at=0.0), 0.0),
        (R("loose", received_at=0.0, slo_ttft_ms=5000), 0.1),
        (R("tight", received_at=1.0, slo_ttft_ms=100), 1.0),
        (R("bad", received_at=0.0, slo_ttft_ms=-1), 0.2),
    ]
    assert order(SLODeadline(), reqs) == ["tight", "loose", "none", "bad"]


def test_by_name() -> None:
    assert ordering_by_name("edf-ordering-policy") == EDF()
