"""Which job store and file store a coordinator's broker means.

Job state goes to the broker's own database: the memory store beside the memory broker, the
SQLite file of the SQLite broker (its own connection), the Redis broker's client, the
PostgreSQL broker's pool. Pub/Sub keeps no result lists, so a batch's results could not be
collected: a start-up error says so. Files go to ``batch.files_url``: a local directory, or
an S3-compatible store (``s3://``, the ``s3`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass

from sluiceway.batch.base import FileStore, JobStore
from sluiceway.batch.local_files import LocalFileStore, local_directory
from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.errors import ConfigError, UnsupportedError

__all__ = ["BatchStores", "open_batch_stores", "open_file_store", "open_job_store"]


@dataclass(frozen=True)
class BatchStores:
    jobs: JobStore
    files: FileStore

    async def aclose(self) -> None:
        await self.jobs.aclose()
        close = getattr(self.files, "aclose", None)
        if close is not None:
            await close()


async def open_file_store(url: str) -> FileStore:
    """A local directory (a path or ``file://``), or an S3-compatible store (``s3://``)."""
    if url.startswith("s3://"):
        from sluiceway.batch.s3_files import open_s3_file_store

        return await open_s3_file_store(url)
    return LocalFileStore(local_directory(url))


async def open_job_store(transport: str, broker: Broker, options: BrokerOptions) -> JobStore | None:
    """The job store in ``broker``'s database (None for a transport without one); Pub/Sub is
    refused (:class:`UnsupportedError`)."""
    if transport == "gcp-pubsub":
        raise UnsupportedError(
            "the Batch API needs a broker that keeps result lists; Pub/Sub keeps none"
            " (use Redis, PostgreSQL or SQLite)"
        )
    if transport == "memory":
        return MemoryJobStore()
    if transport == "sqlite":
        from sluiceway.batch.sqlite_jobs import open_sqlite_job_store
        from sluiceway.broker.sqlite import database_path

        return await open_sqlite_job_store(database_path(options))
    if transport == "redis-sortedset":
        from sluiceway.batch.redis_jobs import RedisJobStore
        from sluiceway.broker.redis import RedisBroker

        if not isinstance(broker, RedisBroker):
            raise TypeError("the redis-sortedset transport needs a RedisBroker")
        if broker.keyspace.cluster:
            raise ConfigError("the Batch API does not run on Redis Cluster", field="redis_url")
        return RedisJobStore(broker.client)
    if transport == "postgres":
        from sluiceway.batch.postgres_jobs import open_postgres_job_store
        from sluiceway.broker.postgres import PostgresBroker

        if not isinstance(broker, PostgresBroker):
            raise TypeError("the postgres transport needs a PostgresBroker")
        return await open_postgres_job_store(broker.db)
    return None


async def open_batch_stores(
    transport: str, broker: Broker, options: BrokerOptions, *, files_url: str
) -> BatchStores | None:
    """The stores for ``transport`` (None for a transport without a job store)."""
    jobs = await open_job_store(transport, broker, options)
    if jobs is None:
        return None
    try:
        return BatchStores(jobs, await open_file_store(files_url))
    except BaseException:
        await jobs.aclose()
        raise
