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


def test_every_scalar_setting_is_a_flag_declared_once() -> None:
    """A setting's one declaration (its field) gives the flag, its help and its default."""
    from sluiceway.config.processor_settings import flag_of, scalar_settings

    group = typer.main.get_group(cli())
    command = group.commands["processor"]
    helps = {opt: param.help or "" for param in command.params for opt in param.opts}
    for setting in scalar_settings():
        flag = flag_of(setting)
        assert f"(default: {flag.shown})" in helps[flag.option(setting.name)]


def test_a_duration_flag_reaches_the_settings_in_seconds() -> None:
    from sluiceway.processor.command import _overrides

    given = {"request_timeout": "90s", "concurrency": 3, "prometheus_url": "http://p"}
    out = _overrides(given)
    assert out["request_timeout"] == 90.0 and out["concurrency"] == 3
    assert out["prometheus_url"] == "http://p" and out["drain_timeout"] is None
    bad = CliRunner().invoke(cli(), ["processor", "--transport", "memory", "--drain-timeout", "x"])
    assert bad.exit_code == 2 and "--drain-timeout" in bad.output
