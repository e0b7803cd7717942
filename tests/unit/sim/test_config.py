"""SimConfig validation, profiles and run-time replacement."""

from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.sim import SimConfig


def test_guide_pool_profile_takes_about_two_seconds_for_128_tokens_when_full() -> None:
    cfg = SimConfig.from_profile("guide-pool")
    f = cfg.time_factor_under_load
    e2e = (cfg.time_to_first_token + 127 * cfg.inter_token_latency) * f
    assert cfg.max_num_seqs == 10 and 1.8 <= e2e <= 2.2


def test_h100_profile_and_overrides() -> None:
    cfg = SimConfig.from_profile("h100-8b", max_num_seqs=4)
    assert cfg.max_num_seqs == 4
    assert (cfg.inter_token_latency, cfg.prefill_overhead) == (0.012, 0.030)
    assert cfg.prefill_time_per_token == pytest.approx(0.00025)
    assert cfg.time_factor_under_load == 2.0


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"max_num_seqs": 0}, "--max-num-seqs"),
        ({"inter_token_latency": -1}, "--inter-token-latency"),
        ({"scheduling_policy": "lifo"}, "--scheduling-policy"),
        ({"failure_types": ["nope"]}, "--failure-types"),
        ({"failure_injection_rate": 101}, "--failure-injection-rate"),
        ({"time_factor_under_load": 0.5}, "--time-factor-under-load"),
        ({"colour": "blue"}, "--colour"),
    ],
)
def test_bad_values_name_the_flag(values: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        SimConfig.from_mapping(values)
    assert info.value.field == field


def test_unknown_profile_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="guide-pool"):
        SimConfig.from_profile("a100")


def test_kebab_keys_and_lists_are_accepted_and_headers_lowercased() -> None:
    cfg = SimConfig().replace({"max-num-seqs": 3, "label-headers": ["X-Team"]})
    assert cfg.max_num_seqs == 3 and cfg.label_headers == ("x-team",)
    assert cfg.as_dict()["label_headers"] == ["x-team"]
