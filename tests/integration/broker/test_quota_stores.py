"""Which store a quota gate's address gets, per transport; AUTH and DB from the processor URL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.memory import open_memory_broker
from sluiceway.broker.quota_redis import open_redis_quota_store, quota_url
from sluiceway.broker.quota_sqlite import SqliteQuotaStore, open_sqlite_quota_store
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.broker.redis import open_redis_broker
from sluiceway.broker.sqlite import open_sqlite_broker
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.localservices import RedisServer

NOW = 1_700_000_000.0


def test_a_bare_address_on_the_processor_server_takes_its_url() -> None:
    url = "rediss://user:secret@cache.internal:6380/3"
    assert quota_url("cache.internal:6380", processor_url=url) == url
    assert quota_url("other:6379", processor_url=url) == "redis://other:6379"
    assert quota_url("redis://x:1/2", processor_url=url) == "redis://x:1/2"


async def test_memory_transport_shares_one_in_process_store() -> None:
    broker = await open_memory_broker(BrokerOptions())
    stores = await open_quota_stores("memory", broker, BrokerOptions())
    assert isinstance(stores(""), MemoryQuotaStore)
    assert stores("") is stores("redis:6379")
    await stores.aclose()


async def test_sqlite_transport_keeps_counters_in_the_broker_file(tmp_path: Path) -> None:
    options = BrokerOptions(url=str(tmp_path / "q.db"))
    broker = await open_sqlite_broker(options)
    stores = await open_quota_stores("sqlite", broker, options)
    store = stores("")
    assert isinstance(store, SqliteQuotaStore)
    assert await store.acquire("quota:team:a", holder="h", limit=1, lease_until=NOW + 9, now=NOW)
    await stores.aclose()
    await broker.aclose()


@pytest.mark.redis
async def test_redis_quota_uses_auth_and_db_of_the_processor_url(
    redis_factory: Callable[..., RedisServer],
) -> None:
    server = redis_factory()
    admin = aioredis.Redis(host=server.host, port=server.port, decode_responses=True)
    await admin.config_set("requirepass", "s3cret")
    await admin.aclose()
    url = f"redis://:s3cret@{server.host}:{server.port}/2"
    options = BrokerOptions(url=url)
    broker = await open_redis_broker(options)
    stores = await open_quota_stores("redis-sortedset", broker, options)
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        store = stores(f"{server.host}:{server.port}")
        assert store is stores("")
        assert await store.acquire(
            "quota:team:premium", holder="h1", limit=2, lease_until=NOW + 30, now=NOW
        )
        assert await raw.get("quota:team:premium") == "1"
        assert await raw.zscore("quota:team:premium:holders", "h1") == pytest.approx(
            NOW + 30, abs=1e-3
        )
    finally:
        await raw.aclose()
        await stores.aclose()
        await broker.aclose()


@pytest.mark.redis
async def test_an_alias_of_the_processor_url_shares_its_store(redis_server: RedisServer) -> None:
    # The guide's gates say ``redis:6379`` (its urlSecret); REDIS_URL points elsewhere.
    options = BrokerOptions(url=redis_server.url, url_aliases=("redis://redis:6379",))
    broker = await open_redis_broker(options)
    stores = await open_quota_stores("redis-sortedset", broker, options)
    try:
        assert stores("redis:6379") is stores("")
        assert stores("redis://redis:6379") is stores("")
        assert stores("other:6379") is not stores("")
    finally:
        await stores.aclose()
        await broker.aclose()


@pytest.mark.redis
async def test_another_address_gets_its_own_store(
    redis_server: RedisServer, redis_factory: Callable[..., RedisServer]
) -> None:
    other = redis_factory()
    options = BrokerOptions(url=redis_server.url)
    broker = await open_redis_broker(options)
    stores = await open_quota_stores("redis-sortedset", broker, options)
    try:
        mine, theirs = stores(""), stores(f"{other.host}:{other.port}")
        assert mine is not theirs and theirs is stores(f"{other.host}:{other.port}")
        assert await theirs.acquire(
            "quota:team:x", holder="h", limit=1, lease_until=NOW + 5, now=NOW
        )
        assert await mine.count("quota:team:x") == 0
        assert await theirs.count("quota:team:x") == 1
    finally:
        await stores.aclose()
        await broker.aclose()


@pytest.mark.redis
async def test_a_dead_peers_holders_are_reaped_by_the_next_reclaim_round(
    redis_server: RedisServer,
) -> None:
    """Crash between ack and release on a key with no further traffic: no slot leaks."""
    options = BrokerOptions(url=redis_server.url)
    broker = await open_redis_broker(options)
    stores = await open_quota_stores("redis-sortedset", broker, options)
    dead_peer = await open_redis_quota_store(f"{redis_server.host}:{redis_server.port}")
    try:
        key = "quota:team:quiet"
        assert await dead_peer.acquire(key, holder="h", limit=1, lease_until=NOW + 10, now=NOW)
        await dead_peer.aclose()  # killed: never releases
        assert await broker.reclaim_expired("team-quiet", NOW + 5, 100) == 0
        assert await stores("").count(key) == 1
        await broker.reclaim_expired("team-quiet", NOW + 11, 100)
        assert await stores("").count(key) == 0
    finally:
        await stores.aclose()
        await broker.aclose()


async def test_sqlite_reclaim_rounds_reap_expired_holders(tmp_path: Path) -> None:
    options = BrokerOptions(url=str(tmp_path / "q.db"))
    broker = await open_sqlite_broker(options)
    stores = await open_quota_stores("sqlite", broker, options)
    peer = await open_sqlite_quota_store(str(tmp_path / "q.db"))
    try:
        assert await peer.acquire(
            "quota:team:a", holder="h", limit=1, lease_until=NOW + 10, now=NOW
        )
        await broker.reclaim_expired("team-a", NOW + 11, 100)
        assert await stores("").count("quota:team:a") == 0
    finally:
        await peer.aclose()
        await stores.aclose()
        await broker.aclose()
