"""Run ``sluiceway check-config`` in process (the real command, without a process per file)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer
from typer.testing import CliRunner

from sluiceway.config.command import register


@dataclass(frozen=True)
class Checked:
    exit_code: int
    output: str

    @property
    def kind(self) -> str:
        """The kind the command recognised (``ok: FILE is a valid KIND (...)``)."""
        line = next(x for x in self.output.splitlines() if x.startswith("ok: "))
        return line.split(" is a valid ")[1].split(" (")[0]


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Subcommands below."""

    register(app)
    return app


def check_config(path: Path, *args: str) -> Checked:
    """``sluiceway check-config PATH [ARGS]``: exit code and everything it printed."""
    result = CliRunner().invoke(_app(), ["check-config", str(path), *args])
    return Checked(result.exit_code, result.output)
