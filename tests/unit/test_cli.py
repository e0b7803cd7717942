"""The command line as a user meets it: help at 80 columns, ``--version``, usage errors."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from sluiceway import __version__
from sluiceway.cli import app, register_all, run


def _commands() -> dict[str, Any]:
    register_all()
    group: Any = typer.main.get_command(app)
    return dict(group.commands)


def _options(name: str) -> list[Any]:
    return [p for p in _commands()[name].params if p.param_type_name == "option"]


COMMANDS = sorted(_commands())


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_component_has_its_command() -> None:
    expected = {"processor", "publish", "results", "cancel", "status", "sim", "check-config"}
    assert expected <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_at_80_columns_shows_every_flag_name_whole(name: str) -> None:
    text = _help(name)
    for param in _options(name):
        for flag in param.opts:
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), (flag, text)
    assert "<bool>" not in text
    assert "`" not in text


@pytest.mark.parametrize("name", COMMANDS)
def test_every_flag_has_a_one_line_description(name: str) -> None:
    for param in _options(name):
        if param.name != "help":
            assert param.help, f"{name} {param.opts[0]} has no help"
            assert "\n" not in param.help.strip()
            assert "`" not in param.help


@pytest.mark.parametrize("name", COMMANDS)
def test_every_flag_says_its_default(name: str) -> None:
    for param in _options(name):
        if param.name == "help" or param.is_flag:
            continue
        shown = param.default is not None and param.show_default is not False
        assert shown or "default" in (param.help or ""), f"{name} {param.opts[0]}"


def test_the_root_help_is_plain_and_lists_version() -> None:
    text = _help()
    assert "--version" in text and "<bool>" not in text


def test_version_flag_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--version"]) == 0
    assert capsys.readouterr().out.strip() == __version__


def test_a_usage_error_is_one_error_line_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["sim", "--port", "70000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "--port" in err[0]


def test_an_unknown_command_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["procesor"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
