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
    args = ["processor", "--transport", "memory", "--redis.igw-base-url=x"]
    result = CliRunner().invoke(cli(), args)
    assert result.exit_code == 2 and "--redis." in result.output


def test_deprecated_flags_are_translated_and_upstreams_default_transport_is_named() -> None:
    runner, app = CliRunner(), cli()
    pubsub = runner.invoke(app, ["processor", "--message-queue-impl", "redis-pubsub"])
    assert pubsub.exit_code == 2 and "redis-pubsub" in pubsub.output
    assert "deprecated flag, translated" in pubsub.output
    no_url = runner.invoke(app, ["processor", "--message-queue-impl=redis-sortedset"])
    assert no_url.exit_code == 2 and "--redis.ss.igw-base-url" in no_url.output
