from __future__ import annotations

from sluiceway.flowcontrol.legacy import legacy_admit


def test_sheddable_refused_only_when_saturated() -> None:
    refused = legacy_admit(-1, 1.0)
    assert not refused.admitted and refused.status == 429
    assert legacy_admit(-1, 0.99).admitted
    assert legacy_admit(0, 5.0).admitted


def test_without_a_detector_everything_passes() -> None:
    assert legacy_admit(-10, None).admitted
