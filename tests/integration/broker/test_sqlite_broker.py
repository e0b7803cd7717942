"""The sqlite broker through the broker conformance suite, plus durability across reopen."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from brokers.conformance import BrokerConformance
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.sqlite import open_sqlite_broker


class TestSqliteBroker(BrokerConformance):
    @pytest.fixture
    async def broker(self, tmp_path: Path) -> AsyncIterator[Broker]:
        broker = await open_sqlite_broker(BrokerOptions(url=str(tmp_path / "q.db")))
        yield broker
        await broker.aclose()
