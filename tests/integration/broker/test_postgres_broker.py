"""The postgres broker through the broker and inspection conformance suites."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from brokers.conformance import BrokerConformance
from brokers.inspect_conformance import InspectConformance
from brokers.peek_order_conformance import PeekOrderConformance
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.postgres import open_postgres_broker


class TestPostgresBroker(BrokerConformance, PeekOrderConformance):
    @pytest.fixture
    async def broker(self, postgres_dsn: str) -> AsyncIterator[Broker]:
        broker = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
        yield broker
        await broker.aclose()


class TestPostgresInspection(InspectConformance):
    """``status`` and ``results`` on PostgreSQL; the side table is ``sluiceway.invalid_info``."""

    @pytest.fixture
    async def broker(self, postgres_dsn: str) -> AsyncIterator[Broker]:
        broker = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
        yield broker
        await broker.aclose()

    async def invalid_reasons(self, broker: Any, queue: str) -> dict[str, str]:
        return dict(await broker.invalid_reasons(queue))
