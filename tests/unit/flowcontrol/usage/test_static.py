from __future__ import annotations

from sluiceway.flowcontrol import BandSettings, CapacityView, FlowController, FlowControlSettings
from sluiceway.flowcontrol import Request as R
from sluiceway.flowcontrol.usage import StaticUsageLimit


def test_threshold_gates_every_band_on_ge() -> None:
    fc = FlowController(
        FlowControlSettings(bands=(BandSettings(5),), usage_limit=StaticUsageLimit(0.5))
    )
    for i in range(4):
        fc.add(R(f"r{i}"), 0.0)
    got = fc.next_dispatches(1.0, CapacityView(0.3, request_cost=0.1)).dispatched
    assert len(got) == 2  # 0.3 -> 0.4 -> 0.5: gated at exactly 0.5
    assert list(fc.next_dispatches(1.0, CapacityView(0.5)).ceilings) == [0.5, 0.5]
