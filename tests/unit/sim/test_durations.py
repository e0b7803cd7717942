"""Durations as flags and /admin/config take them: units, bare milliseconds, named errors."""

from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.sim.durations import parse_latency, to_milliseconds


def test_durations_take_units_and_bare_numbers_are_milliseconds() -> None:
    assert parse_latency("12ms", "--x") == pytest.approx(0.012)
    assert parse_latency("0.5s", "--x") == 0.5
    assert parse_latency("250us", "--x") == pytest.approx(0.00025)
    assert parse_latency("30", "--x") == pytest.approx(0.030)
    assert parse_latency(20, "x") == pytest.approx(0.020)
    assert parse_latency(0.5, "x") == pytest.approx(0.0005)
    assert to_milliseconds(0.02) == 20.0


@pytest.mark.parametrize("bad", ["fast", "-3ms", -1, True, None, [10]])
def test_anything_else_is_an_error_naming_the_field(bad: object) -> None:
    with pytest.raises(ConfigError) as info:
        parse_latency(bad, "inter-token-latency")  # type: ignore[arg-type]
    assert info.value.field == "inter-token-latency"
