"""Transport, pools and merge-policy documents in llm-d-async's formats."""

from __future__ import annotations

from typing import Any

import pytest

from sluiceway.config import load_merge_policy, load_pools, load_transport_config
from sluiceway.errors import ConfigError, UnsupportedError

QUEUE = {"queue_name": "team-batch", "igw_base_url": "http://router:80/"}


def test_redis_defaults_and_queue_id() -> None:
    loaded = load_transport_config({"queues": [QUEUE]}, "redis-sortedset", env={})
    config = loaded.value
    assert (config.retry_queue_name, config.result_queue_name) == (
        "retry-sortedset",
        "result-list",
    )
    assert (config.poll_interval_ms, config.batch_size, config.claim_lease_ttl_seconds) == (
        1000,
        10,
        300.0,
    )
    queue = config.all_queues[0]
    assert (queue.id, queue.worker_pool_id, queue.request_path_url) == (
        "team-batch",
        "default",
        "/v1/completions",
    )
    assert queue.igw_base_url == "http://router:80"


def test_url_falls_back_to_env_and_explicit_wins() -> None:
    env = {"REDIS_URL": "redis://env:6379"}
    assert load_transport_config({}, "redis-sortedset", env=env).value.url == "redis://env:6379"
    given = {"url": "redis://file:6379"}
    assert load_transport_config(given, "redis-sortedset", env=env).value.url == given["url"]


def test_numbers_as_strings_and_zero_poll_interval() -> None:
    data = {"batch_size": "20", "poll_interval_ms": 0, "queues": [{**QUEUE, "gate_params": "{}"}]}
    config = load_transport_config(data, "redis-sortedset", env={}).value
    assert (config.batch_size, config.poll_interval_ms) == (20, 1000)


def test_enable_tracing_is_cosmetic() -> None:
    loaded = load_transport_config({"enable_tracing": True}, "redis-sortedset", env={})
    assert any("enable_tracing" in w for w in loaded.warnings)


def test_gcp_pubsub_topics() -> None:
    data = {
        "project_id": "p",
        "result_topic_id": "projects/p/topics/results",
        "topics": [{"subscriber_id": "sub-a", "igw_base_url": "http://r"}],
    }
    config = load_transport_config(data, "gcp-pubsub").value
    assert [q.id for q in config.all_queues] == ["sub-a"]


@pytest.mark.parametrize(
    ("data", "transport", "field"),
    [
        ({"topics": []}, "redis-sortedset", "topics"),
        ({"colour": 1}, "redis-sortedset", "colour"),
        ({"queues": [{"igw_base_url": "http://r"}]}, "redis-sortedset", "queues[0].queue_name"),
        ({"queues": [QUEUE, QUEUE]}, "redis-sortedset", "queues[1]"),
        ({"queues": [{**QUEUE, "igw_base_url": "router"}]}, "memory", "queues[0].igw_base_url"),
        ({"batch_size": 0}, "sqlite", "batch_size"),
        ({"mode": "sentinel"}, "redis-sortedset", None),
        ({"url": "redis://x"}, "memory", "url"),
    ],
)
def test_transport_errors_name_the_field(
    data: dict[str, Any], transport: str, field: str | None
) -> None:
    with pytest.raises(ConfigError) as info:
        load_transport_config(data, transport, env={})
    assert info.value.field == field


def test_unsupported_and_unknown_transports() -> None:
    with pytest.raises(UnsupportedError, match="redis-pubsub"):
        load_transport_config({}, "redis-pubsub")
    with pytest.raises(ConfigError, match="unknown transport"):
        load_transport_config({}, "kafka")


def test_pools() -> None:
    pools = load_pools([{"id": "qwen-pool", "workers": 4, "gate_type": "local-max-concurrency",
                         "gate_params": {"limit": "2"}}]).value  # fmt: skip
    assert pools[0].workers == 4 and pools[0].gate_params == {"limit": "2"}
    with pytest.raises(ConfigError) as info:
        load_pools([{"id": "a", "workers": 0}])
    assert info.value.field == "[0].workers"
    with pytest.raises(ConfigError, match="duplicate"):
        load_pools([{"id": "a", "workers": 1}, {"id": "a", "workers": 2}])


def test_merge_policy_defaults_and_lanes() -> None:
    assert load_merge_policy({}).value.type == "random-robin"
    policy = load_merge_policy(
        {"type": "tier-priority", "parameters": {"lane_objectives": {"overflow-batch": "be"}}}
    ).value
    params = policy.parameters
    assert params.lane_objectives == {"overflow-batch": "be"}
    assert (params.fairness_attribute, params.tier_label, params.priority_header) == (
        "userid",
        "tier",
        "",
    )
    assert params.objective_header == "x-llm-d-inference-objective"


def test_merge_policy_errors_and_warnings() -> None:
    with pytest.raises(ConfigError) as info:
        load_merge_policy({"type": "fifo"})
    assert info.value.field == "type"
    with pytest.raises(ConfigError) as info:
        load_merge_policy(
            {"type": "tier-priority", "parameters": {"fairness_header": "bad header"}}
        )
    assert info.value.field == "parameters.fairness_header"
    loaded = load_merge_policy({"type": "random-robin", "parameters": {"tier_label": "t"}})
    assert loaded.warnings == ("parameters.tier_label: unused by random-robin",)


def test_sentinel_mode_takes_the_sentinel_options_from_the_url_and_names_them_once() -> None:
    sentinels = {"mode": "sentinel", "addrs": ["s1:26379"], "master_name": "m"}
    url = "redis://:pw-123@ignored/0?sentinel_password=spw-456"
    assert load_transport_config({"url": url, **sentinels}, "redis-sortedset").value.url == url
    twice = "redis+sentinel://s1/m/0"
    with pytest.raises(ConfigError, match="name the sentinels once") as err:
        load_transport_config({"url": twice, **sentinels}, "redis-sortedset")
    assert err.value.field == "url"
