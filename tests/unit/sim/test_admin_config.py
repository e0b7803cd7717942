"""/admin/config: the CLI's units, duration strings, errors that name the JSON key."""

from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.sim import SimConfig
from sluiceway.sim.admin_config import apply_admin_changes, config_view


def test_bare_numbers_are_milliseconds_as_on_the_command_line() -> None:
    cfg = apply_admin_changes(SimConfig(), {"inter-token-latency": 20, "max_num_seqs": 7})
    assert cfg.inter_token_latency == pytest.approx(0.020)
    assert cfg.max_num_seqs == 7


def test_duration_strings_with_units_are_accepted() -> None:
    cfg = apply_admin_changes(
        SimConfig(), {"time-to-first-token": "500ms", "prefill_time_per_token": "250us"}
    )
    assert cfg.time_to_first_token == pytest.approx(0.5)
    assert cfg.prefill_time_per_token == pytest.approx(0.00025)


def test_the_view_round_trips_in_the_same_units() -> None:
    view = config_view(SimConfig(inter_token_latency=0.012))
    assert view["inter_token_latency"] == 12.0 and view["max_num_seqs"] == 5
    runtime = {k: view[k] for k in ("inter_token_latency", "time_to_first_token")}
    assert apply_admin_changes(SimConfig(), runtime).inter_token_latency == pytest.approx(0.012)


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"inter-token-latency": "soon"}, "inter-token-latency"),
        ({"time_to_first_token": -5}, "time_to_first_token"),
        ({"max-num-seqs": 0}, "max-num-seqs"),
        ({"block_size": 32}, "block_size"),
        ({"no-such-thing": 1}, "no-such-thing"),
        ({"eos-probability": 2}, "eos-probability"),
    ],
)
def test_errors_name_the_json_key_as_sent(body: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        apply_admin_changes(SimConfig(), body)
    assert info.value.field == key
    assert str(info.value).startswith(f"{key}: ")
