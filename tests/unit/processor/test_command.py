"""The publish command writes the guide's entries byte for byte; commands are registered."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from sluiceway.processor.command import guide_member, register


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def test_guide_member_is_the_publish_function_output() -> None:
    expected = (
        '{"internal":{},"request_kind":"plain","data":{"id":"batch-1764044000-42-0007",'
        '"created":1764044000,"deadline":1764044300,"payload":{"model":"Qwen/Qwen3-32B",'
        '"prompt":"summarize this","max_tokens":64},"metadata":{"team":"batch"}}}'
    )
    member = guide_member(
        "batch", "1764044000-42", 7, now=1764044000, deadline=1764044300, model="Qwen/Qwen3-32B"
    )
    assert member == expected


def test_commands_are_registered_and_memory_publish_is_refused() -> None:
    runner, app = CliRunner(), cli()
    for name in ("processor", "publish", "results"):
        assert runner.invoke(app, [name, "--help"]).exit_code == 0
    refused = runner.invoke(app, ["publish", "batch", "1", "--transport", "memory"])
    assert refused.exit_code == 2 and "memory transport" in refused.output


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
