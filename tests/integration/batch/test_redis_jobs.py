"""The Redis job store passes the job-store conformance on a private redis-server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import redis.asyncio as aioredis
from jobstore_conformance import ALL

from sluiceway.batch.base import JobStore
from sluiceway.batch.redis_jobs import RedisJobStore
from sluiceway.localservices import RedisServer

pytestmark = pytest.mark.redis


@pytest.mark.parametrize("check", ALL, ids=lambda c: c.__name__)
async def test_conformance(
    redis_server: RedisServer, check: Callable[[JobStore], Awaitable[None]]
) -> None:
    client = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        await check(RedisJobStore(client))
    finally:
        await client.aclose()


async def test_bytes_replies_read_the_same(redis_server: RedisServer) -> None:
    """The broker's client may or may not decode replies."""
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        for check in ALL:
            await client.flushdb()
            await check(RedisJobStore(client))
    finally:
        await client.aclose()
