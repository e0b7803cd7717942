"""The redis broker's inspection views; the side hash is ``<queue>:invalid:info``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from brokers.inspect_conformance import InspectConformance
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.keys import Keyspace
from sluiceway.broker.redis import open_redis_broker
from sluiceway.localservices import RedisServer

pytestmark = pytest.mark.redis


class TestRedisInspection(InspectConformance):
    @pytest.fixture
    async def broker(self, redis_server: RedisServer) -> AsyncIterator[Broker]:
        self.url = redis_server.url
        broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
        yield broker
        await broker.aclose()

    async def invalid_reasons(self, broker: Any, queue: str) -> dict[str, str]:
        key = Keyspace().queue(queue).invalid_info
        assert key == f"{queue}:invalid:info"
        client = aioredis.Redis.from_url(self.url, decode_responses=True)
        try:
            return dict(await client.hgetall(key))
        finally:
            await client.aclose()
