"""The memory broker through the conformance suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.memory import open_memory_broker

from .conformance import BrokerConformance


class TestMemoryBroker(BrokerConformance):
    @pytest.fixture
    async def broker(self) -> AsyncIterator[Broker]:
        broker = await open_memory_broker(BrokerOptions())
        yield broker
        await broker.aclose()
