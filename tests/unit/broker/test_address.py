"""A broker named by --transport / --url: schemes checked, read-only commands create nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.broker.address import broker_options
from sluiceway.errors import ConfigError


def test_redis_falls_back_to_redis_url_and_checks_the_scheme() -> None:
    env = {"REDIS_URL": "redis://h:1/0"}
    assert broker_options("redis-sortedset", None, must_exist=True, env=env).url == env["REDIS_URL"]
    with pytest.raises(ConfigError) as info:
        broker_options("redis-sortedset", "h:1", must_exist=False, env={})
    assert info.value.field == "--url"
    with pytest.raises(ConfigError, match="REDIS_URL"):
        broker_options("redis-sortedset", None, must_exist=False, env={})


def test_memory_and_unknown_transports_name_the_flag() -> None:
    for transport in ("memory", "kafka"):
        with pytest.raises(ConfigError) as info:
            broker_options(transport, None, must_exist=False, env={})
        assert info.value.field == "--transport"


def test_sqlite_must_exist_for_readers_but_not_for_writers(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    with pytest.raises(ConfigError, match="no SQLite database"):
        broker_options("sqlite", str(db), must_exist=True, env={})
    assert broker_options("sqlite", f"sqlite://{db}", must_exist=False, env={}).url == str(db)
    with pytest.raises(ConfigError, match="looks like a URL"):
        broker_options("sqlite", "redis://h:1/0", must_exist=False, env={})
    assert not db.exists()
