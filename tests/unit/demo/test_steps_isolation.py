"""Step H picks the time scale its event loop's lag allows, and a "too busy" verdict is no
failure (never a false NO)."""

from __future__ import annotations

from sluiceway.demo.findings import StepReport
from sluiceway.demo.steps_isolation import HEADROOM, allowed_scale


def test_a_quiet_loop_keeps_the_demos_scale() -> None:
    assert allowed_scale(0.0, 30.0, 5.0) == 5.0
    assert allowed_scale(2.0, 30.0, 5.0) == 5.0  # 2 ms x 2 x 5 = 20 ms < 30 ms


def test_a_late_loop_lowers_the_scale_to_what_its_lag_allows() -> None:
    scale = allowed_scale(6.0, 30.0, 5.0)
    assert scale == 2.5
    assert 6.0 * HEADROOM * scale <= 30.0
    assert allowed_scale(40.0, 30.0, 5.0) == 1.0  # never below real time


def test_too_busy_is_reported_but_is_no_failure() -> None:
    report = StepReport("H", "isolation")
    report.too_busy("realtime isolation", "lag p99 44 ms at scale 1")
    assert report.passed and report.checks[0].verdict == "too busy"
    report.check("something else", False, "seen")
    assert not report.passed and report.checks[1].verdict == "NO"
