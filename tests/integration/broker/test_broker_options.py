"""Opening brokers: URLs, modes and paths named in errors; the registry knows the names."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.broker import BROKER_TYPES, broker_factory
from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.redis import connect_redis, open_redis_broker
from sluiceway.broker.sqlite import open_sqlite_broker, sqlite_path
from sluiceway.errors import BrokerError, ConfigError
from sluiceway.ports import free_port


def test_durable_transports_are_registered() -> None:
    assert {"redis-sortedset", "sqlite", "memory"} <= set(BROKER_TYPES)
    assert broker_factory("redis-sortedset") is open_redis_broker
    assert broker_factory("sqlite") is open_sqlite_broker


async def test_redis_without_a_url_names_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ConfigError) as err:
        await open_redis_broker(BrokerOptions())
    assert err.value.field == "url"


async def test_an_unreachable_redis_is_a_broker_error() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(BrokerError):
        await open_redis_broker(BrokerOptions(url=url))


@pytest.mark.parametrize(
    ("mode", "addrs", "master"),
    [("sentinel", (), "m"), ("sentinel", ("h:1",), ""), ("ring", (), "")],
)
def test_bad_modes_name_the_field(mode: str, addrs: tuple[str, ...], master: str) -> None:
    with pytest.raises(ConfigError) as err:
        connect_redis("redis://h:1/0", mode=mode, addrs=addrs, master_name=master)
    assert err.value.field == "mode"


def test_sqlite_urls_and_paths() -> None:
    assert sqlite_path("sqlite:///var/lib/q.db") == "/var/lib/q.db"
    assert sqlite_path("sqlite://data/q.db") == "data/q.db"
    assert sqlite_path("q.db") == "q.db"


async def test_sqlite_without_a_path_names_the_field() -> None:
    with pytest.raises(ConfigError) as err:
        await open_sqlite_broker(BrokerOptions())
    assert err.value.field == "url"


async def test_sqlite_survives_a_reopen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/deep/dir/q.db"
    first = await open_sqlite_broker(BrokerOptions(url=url))
    await first.enqueue("q", [('{"x": 1}', 1.0)])
    await first.aclose()
    second = await open_sqlite_broker(BrokerOptions(url=url))
    assert await second.backlog("q") == 1
    await second.aclose()


async def test_sentinel_masters_take_auth_db_and_tls_from_the_url() -> None:
    client = connect_redis(
        "rediss://app:secret@ignored:1/3", mode="sentinel", addrs=("s1:26379",), master_name="m"
    )
    try:
        kwargs = client.connection_pool.connection_kwargs
        assert (kwargs["username"], kwargs["password"], kwargs["db"]) == ("app", "secret", 3)
        assert "SSL" in client.connection_pool.connection_class.__name__
        assert "host" not in kwargs  # the master's address comes from the sentinels
    finally:
        await client.aclose()
