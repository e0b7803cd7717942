"""The Redis quota store through the quota-store conformance suite, plus its Redis shape."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from brokers.quota_conformance import QuotaStoreConformance
from sluiceway.broker.quota_redis import open_redis_quota_store
from sluiceway.gates.quota_store import QuotaStore
from sluiceway.localservices import RedisServer

pytestmark = pytest.mark.redis


class TestRedisQuotaStore(QuotaStoreConformance):
    @pytest.fixture
    async def store(self, redis_server: RedisServer) -> AsyncIterator[QuotaStore]:
        store = await open_redis_quota_store(f"{redis_server.host}:{redis_server.port}")
        yield store
        await store.aclose()
