"""The transport registry knows the durable brokers; opening Redis names the bad field."""

from __future__ import annotations

import pytest

from sluiceway.broker import BROKER_TYPES, broker_factory
from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.redis import open_redis_broker
from sluiceway.broker.sqlite import open_sqlite_broker
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
