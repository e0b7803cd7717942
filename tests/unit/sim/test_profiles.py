"""Every named profile builds a valid configuration; flags override it."""

from __future__ import annotations

import pytest

from sluiceway.sim import SimConfig
from sluiceway.sim.profiles import PROFILES


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profiles_are_valid(name: str) -> None:
    cfg = SimConfig.from_profile(name, max_num_seqs=3)
    assert cfg.max_num_seqs == 3


def test_guide_pool_completes_128_tokens_in_about_2_s_when_full() -> None:
    cfg = SimConfig.from_profile("guide-pool")
    full = cfg.time_factor_under_load
    assert (cfg.time_to_first_token + 127 * cfg.inter_token_latency) * full == pytest.approx(1.98)
