"""Upstream's deprecated flags, as its Helm chart passes them, become a transport config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluiceway.config.processor_settings import load_processor_settings
from sluiceway.errors import ConfigError, UnsupportedError
from sluiceway.processor.build import runtime_settings
from sluiceway.processor.legacy_flags import parse_legacy_flags

# What the chart's deployment template renders for redis-sortedset in single-queue mode.
CHART_ARGS = [
    "--message-queue-impl=redis-sortedset",
    "--redis.ss.igw-base-url=http://gateway:80",
    "--redis.ss.request-path-url",
    "",
    "--redis.ss.request-queue-name",
    "request-sortedset",
    "--redis.ss.gate-type=constant",
    '--redis.ss.gate-params={"budget":"1"}',
    "--redis.ss.result-queue-name",
    "result-list",
    "--redis.ss.poll-interval-ms",
    "1000",
    "--redis.ss.batch-size",
    "10",
    "--concurrency=8",
]


def test_the_charts_flags_load_as_a_redis_sortedset_transport() -> None:
    legacy = parse_legacy_flags(CHART_ARGS)
    assert legacy.rest == ["--concurrency=8"]
    translated = legacy.transport()
    assert translated is not None
    transport, config = translated
    loaded = load_processor_settings(
        transport=transport, transport_config=config, env={"REDIS_URL": "redis://r:6379"}
    )
    spec = runtime_settings(loaded.value)
    (queue,) = spec.queues
    assert (queue.queue_name, queue.igw_base_url) == ("request-sortedset", "http://gateway:80")
    assert queue.request_path == "/v1/completions"  # the chart renders "" when unset
    assert (queue.gate_type, dict(queue.gate_params)) == ("constant", {"budget": "1"})
    assert (spec.batch_size, spec.poll_interval, spec.result_queue_name) == (10, 1.0, "result-list")
    assert len(legacy.warnings(new_surface=False)) == len(legacy.values) == 9


def test_inline_queues_and_the_redis_url() -> None:
    queues = [{"queue_name": "a", "igw_base_url": "http://gw"}]
    args = ["--redis.url", "redis://h:1/2", f"--redis.ss.queues-config={json.dumps(queues)}"]
    translated = parse_legacy_flags(args).transport()
    assert translated is not None
    config = json.loads(translated[1])
    assert config["url"] == "redis://h:1/2" and config["queues"] == queues


def test_queues_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "queues.json"
    path.write_text(json.dumps([{"queue_name": "b", "igw_base_url": "http://gw"}]))
    translated = parse_legacy_flags(["--redis.ss.queues-config-file", str(path)]).transport()
    assert translated is not None and json.loads(translated[1])["queues"][0]["queue_name"] == "b"


@pytest.mark.parametrize(
    ("impl", "named"),
    [
        ("redis-pubsub", "redis-pubsub"),
        ("gcp-pubsub-gated", "gcp-pubsub"),
        ("gcp-pubsub", "gcp-pubsub"),
    ],
)
def test_unsupported_implementations_are_named(impl: str, named: str) -> None:
    with pytest.raises(UnsupportedError, match=named):
        parse_legacy_flags([f"--message-queue-impl={impl}"]).transport()


def test_bad_legacy_values_name_their_flag() -> None:
    with pytest.raises(ConfigError, match="igw-base-url"):
        parse_legacy_flags(["--message-queue-impl", "redis-sortedset"]).transport()
    with pytest.raises(ConfigError, match="batch-size"):
        args = ["--redis.ss.igw-base-url=http://gw", "--redis.ss.batch-size=ten"]
        parse_legacy_flags(args).transport()
    with pytest.raises(ConfigError, match="unknown message queue"):
        parse_legacy_flags(["--message-queue-impl=kafka"]).transport()


def test_with_the_new_surface_they_are_ignored_with_a_warning() -> None:
    legacy = parse_legacy_flags(["--message-queue-impl=redis-pubsub", "--redis-tracing"])
    (first, second) = legacy.warnings(new_surface=True)
    assert "ignored" in first and "--message-queue-impl" in first and "--redis-tracing" in second


def test_no_legacy_flags_no_transport() -> None:
    legacy = parse_legacy_flags(["--v=2", "--zap-devel"])
    assert legacy.transport() is None and legacy.rest == ["--v=2", "--zap-devel"]
