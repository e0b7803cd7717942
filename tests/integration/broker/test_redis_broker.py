"""The redis-sortedset broker through the broker conformance suite, plus Redis-only behaviour."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from brokers.conformance import BrokerConformance
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.redis import open_redis_broker
from sluiceway.localservices import RedisServer

pytestmark = pytest.mark.redis


class TestRedisBroker(BrokerConformance):
    @pytest.fixture
    async def broker(self, redis_server: RedisServer) -> AsyncIterator[Broker]:
        broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
        yield broker
        await broker.aclose()
