"""priority-holdback: rank / value / explicit ceilings, upstream-exact (docs/design-rules.md rule
20)."""

from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol import BandSettings, CapacityView, FlowController, FlowControlSettings
from sluiceway.flowcontrol.usage import PriorityHoldback

GUIDE_BANDS = (100, 60, 30, 10, -5, -10)


def ceilings(policy: PriorityHoldback, bands: tuple[int, ...] = GUIDE_BANDS) -> list[float]:
    settings = FlowControlSettings(bands=tuple(BandSettings(p) for p in bands), usage_limit=policy)
    cycle = FlowController(settings).next_dispatches(0.0, CapacityView(0.0))
    return [round(c, 3) for c in cycle.ceilings]


def test_rank_spreads_over_provisioned_bands_band_zero_included() -> None:
    got = ceilings(PriorityHoldback(min_ceiling=0.5))
    assert got == [1.0, 0.917, 0.833, 0.75, 0.667, 0.583, 0.5]


def test_value_domain() -> None:
    got = ceilings(PriorityHoldback(min_ceiling=0.5, domain="value"), (100, -100))
    assert got == [1.0, 0.75, 0.5]  # 100, 0, -100


def test_single_band_gets_max() -> None:
    assert ceilings(PriorityHoldback(min_ceiling=0.2, max_ceiling=0.9), ()) == [0.9]


def test_explicit_map_inherits_from_the_band_above_and_stays_monotone() -> None:
    policy = PriorityHoldback(min_ceiling=0.0, domain="explicit", explicit={30: 0.8, -10: 0.9})
    assert ceilings(policy) == [1.0, 1.0, 0.8, 0.8, 0.8, 0.8, 0.8]


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"min_ceiling": 1.0}, "minCeiling"),
        ({"min_ceiling": 0.5, "max_ceiling": 1.5}, "maxCeiling"),
        ({"min_ceiling": 0.6, "max_ceiling": 0.5}, "minCeiling"),
        ({"min_ceiling": 0.1, "explicit": {1: 2.0}}, "ceilings.1"),
    ],
)
def test_invalid_parameters_name_the_field(kw: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        PriorityHoldback(**kw)  # type: ignore[arg-type]
    assert err.value.field == field
