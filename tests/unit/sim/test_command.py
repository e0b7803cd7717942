"""The ``sluiceway sim`` flags: durations, errors that name the option."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sluiceway.cli import app, register_all
from sluiceway.errors import ConfigError
from sluiceway.sim.command import parse_duration


def test_durations_take_units_and_bare_numbers_are_milliseconds() -> None:
    assert parse_duration("12ms", "--x") == pytest.approx(0.012)
    assert parse_duration("0.5s", "--x") == 0.5
    assert parse_duration("250us", "--x") == pytest.approx(0.00025)
    assert parse_duration("30", "--x") == pytest.approx(0.030)
    with pytest.raises(ConfigError) as info:
        parse_duration("fast", "--inter-token-latency")
    assert info.value.field == "--inter-token-latency"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--max-num-seqs", "0"], "--max-num-seqs"),
        (["--scheduling-policy", "lifo"], "--scheduling-policy"),
        (["--inter-token-latency", "soon"], "--inter-token-latency"),
        (["--profile", "nope"], "--profile"),
        (["--failure-types", "rate_limit,bogus"], "--failure-types"),
    ],
)
def test_bad_flags_exit_2_naming_the_option(args: list[str], flag: str) -> None:
    register_all()
    result = CliRunner().invoke(app, ["sim", *args])
    assert result.exit_code == 2
    assert flag in result.output
