"""The sqlite broker through the broker conformance suite, plus its URLs, paths and durability
across a reopen."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from brokers.conformance import BrokerConformance
from brokers.peek_order_conformance import PeekOrderConformance
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.sqlite import open_sqlite_broker, sqlite_path
from sluiceway.errors import ConfigError


class TestSqliteBroker(BrokerConformance, PeekOrderConformance):
    @pytest.fixture
    async def broker(self, tmp_path: Path) -> AsyncIterator[Broker]:
        broker = await open_sqlite_broker(BrokerOptions(url=str(tmp_path / "q.db")))
        yield broker
        await broker.aclose()


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
