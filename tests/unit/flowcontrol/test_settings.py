"""Flow-control settings: defaults as upstream, templates for provisioned bands, and
errors that name the field."""

from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol import BandSettings, EvictionSettings, FlowControlSettings
from sluiceway.flowcontrol.fairness import RoundRobin


def test_zero_band_caps_take_the_defaults() -> None:
    band = BandSettings(3, max_bytes=0, max_requests=0)
    assert (band.max_bytes, band.max_requests) == (1_000_000_000, 5000)


def test_duplicate_priority_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="priorityBands"):
        FlowControlSettings(bands=(BandSettings(1), BandSettings(1)))


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: FlowControlSettings(default_ttl=-1), "default_ttl"),
        (lambda: FlowControlSettings(no_endpoint_ttl=-1), "no_endpoint_ttl"),
        (lambda: EvictionSettings(max_per_decision=0), "eviction.max_per_decision"),
        (lambda: EvictionSettings(timeout=0), "eviction.timeout"),
    ],
)
def test_invalid_settings_name_the_field(build: object, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        build()  # type: ignore[operator]
    assert err.value.field == field


def test_templates_for_provisioned_bands() -> None:
    negative = BandSettings(max_requests=7, fairness=RoundRobin())
    s = FlowControlSettings(
        default_band=BandSettings(max_requests=9), default_negative_band=negative
    )
    assert (s.template_for(5).priority, s.template_for(5).max_requests) == (5, 9)
    low = s.template_for(-3)
    assert (low.priority, low.max_requests, low.fairness) == (-3, 7, negative.fairness)
    assert FlowControlSettings().template_for(-3).max_requests == 5000


def test_band_zero_is_always_provisioned_and_bands_run_high_to_low() -> None:
    s = FlowControlSettings(bands=(BandSettings(-10), BandSettings(100)))
    assert [b.priority for b in s.initial_bands()] == [100, 0, -10]


def test_the_empty_pool_budget_follows_the_default_ttl_unless_set() -> None:
    assert FlowControlSettings(default_ttl=30.0).empty_pool_ttl == 30.0
    assert FlowControlSettings(default_ttl=30.0, no_endpoint_ttl=0.0).empty_pool_ttl == 0.0
