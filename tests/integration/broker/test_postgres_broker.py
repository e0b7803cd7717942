"""The postgres broker through the broker conformance suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from brokers.conformance import BrokerConformance
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.postgres import open_postgres_broker


class TestPostgresBroker(BrokerConformance):
    @pytest.fixture
    async def broker(self, postgres_dsn: str) -> AsyncIterator[Broker]:
        broker = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
        yield broker
        await broker.aclose()
