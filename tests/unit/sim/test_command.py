"""The ``sluiceway sim`` flags: errors that name the option."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sluiceway.cli import app, register_all


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
