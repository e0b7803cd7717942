"""The postgres transport config: upstream's sql-transport keys, the DSN from the environment,
and bad input named at load time (no database needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluiceway.config.processor import load_transport_config
from sluiceway.config.processor_settings import load_processor_settings
from sluiceway.errors import ConfigError

QUEUE = {"queue_name": "team-batch", "igw_base_url": "http://127.0.0.1:1"}


def test_upstream_keys_load_with_their_meaning_here() -> None:
    doc = {
        "url": "postgresql://db/q",
        "lease_ttl_seconds": 45,
        "handoff_timeout_seconds": 900,
        "poll_interval_ms": 500,
        "batch_size": 20,
        "queues": [QUEUE],
    }
    loaded = load_transport_config(doc, "postgres", env={})
    tc = loaded.value
    assert (tc.transport, tc.url, tc.claim_lease_ttl_seconds) == ("postgres", doc["url"], 45)
    assert (tc.poll_interval_ms, tc.batch_size, tc.result_queue_name) == (500, 20, "result-sql")
    assert any("handoff_timeout_seconds" in w for w in loaded.warnings)


@pytest.mark.parametrize("name", ["DATABASE_URL", "SQL_URL"])
def test_the_dsn_comes_from_the_environment(name: str) -> None:
    loaded = load_transport_config({"queues": [QUEUE]}, "postgres", env={name: "postgresql://e/q"})
    assert loaded.value.url == "postgresql://e/q"


def test_database_url_wins_over_sql_url() -> None:
    env = {"DATABASE_URL": "postgresql://a/q", "SQL_URL": "postgresql://b/q"}
    assert load_transport_config({"queues": [QUEUE]}, "postgres", env=env).value.url.endswith("a/q")


def test_no_dsn_anywhere_is_an_error_naming_url() -> None:
    with pytest.raises(ConfigError, match="url"):
        load_transport_config({"queues": [QUEUE]}, "postgres", env={})


def test_a_redis_only_key_is_an_error_naming_the_transport() -> None:
    doc = {"url": "postgresql://db/q", "master_name": "m", "queues": [QUEUE]}
    with pytest.raises(ConfigError, match="not a key of transport postgres"):
        load_transport_config(doc, "postgres", env={})


def test_a_sql_quota_gate_needs_the_postgres_transport() -> None:
    gate = {"attribute": "team", "mode": "concurrency", "limit": "1"}
    queue = {**QUEUE, "gate_type": "sql-quota", "gate_params": gate}
    doc = json.dumps({"url": "redis://127.0.0.1:1", "queues": [queue]})
    with pytest.raises(ConfigError, match="sql-quota gate needs --transport postgres"):
        load_processor_settings(transport="redis-sortedset", transport_config=doc, env={})
    pg = doc.replace("redis://127.0.0.1:1", "postgresql://db/q")
    loaded = load_processor_settings(transport="postgres", transport_config=pg, env={})
    assert loaded.value.transport == "postgres"


def test_pool_size_is_a_positive_integer() -> None:
    doc = {"url": "postgresql://db/q", "pool_size": 20, "queues": [QUEUE]}
    assert load_transport_config(doc, "postgres", env={}).value.pool_size == 20
    with pytest.raises(ConfigError, match="pool_size"):
        load_transport_config({**doc, "pool_size": 0}, "postgres", env={})


def test_check_config_recognises_a_postgres_transport_config(tmp_path: Path) -> None:
    from sluiceway.config.kinds import check_file

    path = tmp_path / "transport.json"
    doc = {"url": "postgresql://db/q", "lease_ttl_seconds": 30, "queues": [QUEUE]}
    path.write_text(json.dumps(doc))
    result = check_file(path, kind="transport-config")
    assert result.kind == "transport-config"
