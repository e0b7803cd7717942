"""The processor command is registered and refuses flags it cannot honour."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from sluiceway.processor.command import register


def cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root, so processor stays a subcommand."""

    register(app)
    return app


def test_processor_is_registered() -> None:
    assert CliRunner().invoke(cli(), ["processor", "--help"]).exit_code == 0


def test_processor_refuses_unsupported_upstream_flags() -> None:
    result = CliRunner().invoke(cli(), ["processor", "--transport", "memory", "--redis.url=x"])
    assert result.exit_code == 2 and "--redis." in result.output
