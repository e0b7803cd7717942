"""Each mode's router document loads and configures the engine as the mode says; the plans
follow the nightly's formulas."""

from __future__ import annotations

import pytest

from sluiceway.bench.isolation.modes import MODES, mode_spec
from sluiceway.bench.isolation.plan import IsolationOptions, realtime_concurrency
from sluiceway.config.router import load_endpoint_picker_config
from sluiceway.flowcontrol.configure import configure


@pytest.mark.parametrize("name", MODES)
def test_every_mode_configures(name: str) -> None:
    spec = mode_spec(name, 10)
    picker = load_endpoint_picker_config(spec.router).value
    flow = configure(picker)
    assert flow is not None
    assert spec.resume == (name == "best")
    assert spec.ceiling == (0.5 if name == "holdback" else 1.0)
    evicting = name in ("eviction", "best")
    assert (spec.env.get("AMT_LEVEL_100_TTFT_ABS") == "0.6") == evicting


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown mode"):
        mode_spec("fast", 10)
    with pytest.raises(ValueError, match="unknown mode"):
        IsolationOptions(modes=("fast",))


def test_the_nightly_plan() -> None:
    assert [realtime_concurrency(level, 10) for level in (20, 80, 90, 100)] == [2, 8, 9, 10]
    plan = IsolationOptions().plan()
    assert plan.levels == (20, 80, 90, 100)
    assert [plan.realtime_requests(k) for k in (2, 8, 9, 10)] == [80, 320, 360, 400]
    assert plan.async_rate == 10 and plan.async_timeout == 20 and plan.warmup == 15
    quick = IsolationOptions(quick=True).plan()
    assert quick.levels == (80,) and quick.realtime_requests(8) == 80
