"""Which stores each broker gets; Pub/Sub is refused at start with a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.sqlite_jobs import SqliteJobStore
from sluiceway.batch.stores import open_batch_stores
from sluiceway.broker import open_broker
from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.memory import MemoryBroker
from sluiceway.errors import UnsupportedError
from sluiceway.localservices import RedisServer


async def test_memory_and_sqlite_keep_jobs_beside_their_queues(tmp_path: Path) -> None:
    files = str(tmp_path / "files")
    memory = await open_batch_stores("memory", MemoryBroker(), BrokerOptions(), files_url=files)
    assert memory is not None and isinstance(memory.jobs, MemoryJobStore)
    options = BrokerOptions(url=f"sqlite:///{tmp_path}/db.sqlite")
    broker = await open_broker("sqlite", options)
    try:
        sqlite = await open_batch_stores("sqlite", broker, options, files_url=files)
        assert sqlite is not None and isinstance(sqlite.jobs, SqliteJobStore)
        await sqlite.jobs.aclose()
    finally:
        await broker.aclose()
    assert (tmp_path / "files").is_dir()


async def test_pubsub_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match="Pub/Sub keeps none"):
        await open_batch_stores("gcp-pubsub", MemoryBroker(), BrokerOptions(), files_url="x")
    none = await open_batch_stores("unknown", MemoryBroker(), BrokerOptions(), files_url="x")
    assert none is None


async def test_postgres_uses_the_brokers_pool(postgres_dsn: str, tmp_path: Path) -> None:
    from sluiceway.batch.postgres_jobs import PostgresJobStore

    options = BrokerOptions(url=postgres_dsn)
    broker = await open_broker("postgres", options)
    try:
        stores = await open_batch_stores("postgres", broker, options, files_url=str(tmp_path))
        assert stores is not None and isinstance(stores.jobs, PostgresJobStore)
    finally:
        await broker.aclose()


@pytest.mark.redis
async def test_redis_uses_the_brokers_client(redis_server: RedisServer, tmp_path: Path) -> None:
    from sluiceway.batch.redis_jobs import RedisJobStore

    options = BrokerOptions(url=redis_server.url)
    broker = await open_broker("redis-sortedset", options)
    try:
        stores = await open_batch_stores(
            "redis-sortedset", broker, options, files_url=str(tmp_path)
        )
        assert stores is not None and isinstance(stores.jobs, RedisJobStore)
    finally:
        await broker.aclose()
