"""The job store in the PostgreSQL broker's database, over its connection pool.

Its three tables (``batch_files``, ``batch_jobs``, ``batch_done``) are created when missing
at start, apart from the broker's versioned schema (``sluiceway db upgrade`` does not manage
them). A commit (done lines and the job) is one transaction; the lease is one conditional
``UPDATE`` whose ``now`` comes from the caller (docs/design-rules.md rule 1).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from sluiceway.batch.base import FileInfo, Page
from sluiceway.batch.status import BatchJob
from sluiceway.broker.postgres_db import PostgresDatabase

__all__ = ["SCHEMA", "PostgresJobStore", "open_postgres_job_store"]

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS batch_files (
  id TEXT PRIMARY KEY, tenant TEXT NOT NULL, created_at BIGINT NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS batch_files_tenant ON batch_files (tenant, created_at);
CREATE TABLE IF NOT EXISTS batch_jobs (
  id TEXT PRIMARY KEY, tenant TEXT NOT NULL, created_at BIGINT NOT NULL,
  terminal BOOLEAN NOT NULL, doc TEXT NOT NULL, cancel_at BIGINT,
  lease_owner TEXT, lease_until DOUBLE PRECISION);
CREATE INDEX IF NOT EXISTS batch_jobs_tenant ON batch_jobs (tenant, created_at);
CREATE TABLE IF NOT EXISTS batch_done (
  batch TEXT NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (batch, line));
"""
_JOB: Final = "SELECT doc, cancel_at FROM batch_jobs"
_PUT: Final = (
    "INSERT INTO batch_jobs (id, tenant, created_at, terminal, doc) VALUES ($1, $2, $3, $4, $5)"
    " ON CONFLICT (id) DO UPDATE SET terminal = excluded.terminal, doc = excluded.doc"
)


def _job(row: Any) -> BatchJob:
    return BatchJob.from_json(row["doc"], cancel_requested_at=row["cancel_at"])


def _put_args(job: BatchJob) -> tuple[Any, ...]:
    return (job.id, job.tenant, job.created_at, job.terminal, job.to_json())


class PostgresJobStore:
    """A :class:`~sluiceway.batch.base.JobStore` in PostgreSQL (the broker's pool, not owned)."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def create_tables(self) -> None:
        await self._db.run(lambda c: c.execute(SCHEMA))

    async def put_file(self, info: FileInfo) -> None:
        sql = (
            "INSERT INTO batch_files VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (id) DO UPDATE SET doc = excluded.doc"
        )
        doc = json.dumps(info.to_doc())
        await self._db.run(lambda c: c.execute(sql, info.id, info.tenant, info.created_at, doc))

    async def get_file(self, tenant: str, file_id: str) -> FileInfo | None:
        sql = "SELECT doc FROM batch_files WHERE id = $1 AND tenant = $2"
        doc = await self._db.fetchval(sql, file_id, tenant)
        return None if doc is None else FileInfo.from_doc(json.loads(doc))

    async def list_files(self, tenant: str) -> list[FileInfo]:
        sql = "SELECT doc FROM batch_files WHERE tenant = $1 ORDER BY created_at DESC, id"
        return [FileInfo.from_doc(json.loads(r["doc"])) for r in await self._db.fetch(sql, tenant)]

    async def delete_file(self, tenant: str, file_id: str) -> bool:
        sql = "DELETE FROM batch_files WHERE id = $1 AND tenant = $2"
        status = await self._db.run(lambda c: c.execute(sql, file_id, tenant))
        return str(status).endswith(" 1")

    async def put_batch(self, job: BatchJob) -> None:
        await self._db.run(lambda c: c.execute(_PUT, *_put_args(job)))

    async def get_batch(self, tenant: str, batch_id: str) -> BatchJob | None:
        rows = await self._db.fetch(f"{_JOB} WHERE id = $1 AND tenant = $2", batch_id, tenant)
        return _job(rows[0]) if rows else None

    async def list_batches(self, tenant: str, *, after: str | None, limit: int) -> Page:
        args: list[Any] = [tenant, limit + 1]
        where = "tenant = $1"
        if after is not None:
            sql = "SELECT created_at FROM batch_jobs WHERE id = $1 AND tenant = $2"
            at = await self._db.fetchval(sql, after, tenant)
            if at is None:
                return Page([], False)
            where += " AND (created_at < $3 OR (created_at = $3 AND id > $4))"
            args += [at, after]
        order = "ORDER BY created_at DESC, id LIMIT $2"
        rows = await self._db.fetch(f"{_JOB} WHERE {where} {order}", *args)
        return Page([_job(r) for r in rows[:limit]], len(rows) > limit)

    async def active_batches(self) -> list[BatchJob]:
        return [_job(r) for r in await self._db.fetch(f"{_JOB} WHERE NOT terminal")]

    async def request_cancel(self, tenant: str, batch_id: str, at: int) -> BatchJob | None:
        sql = (
            "UPDATE batch_jobs SET cancel_at = coalesce(cancel_at, $3)"
            " WHERE id = $1 AND tenant = $2"
        )
        await self._db.run(lambda c: c.execute(sql, batch_id, tenant, at))
        return await self.get_batch(tenant, batch_id)

    async def commit_lines(self, job: BatchJob, numbers: Sequence[int]) -> None:
        rows = [(job.id, n) for n in numbers]

        async def commit(c: Any) -> None:
            async with c.transaction():
                if rows:
                    await c.executemany(
                        "INSERT INTO batch_done VALUES ($1, $2) ON CONFLICT DO NOTHING", rows
                    )
                await c.execute(_PUT, *_put_args(job))

        await self._db.run(commit)

    async def done_lines(self, batch_id: str, numbers: Sequence[int]) -> set[int]:
        sql = "SELECT line FROM batch_done WHERE batch = $1 AND line = ANY($2::int[])"
        return {r["line"] for r in await self._db.fetch(sql, batch_id, list(numbers))}

    async def take_lease(self, batch_id: str, owner: str, *, until: float, now: float) -> bool:
        sql = (
            "UPDATE batch_jobs SET lease_owner = $2, lease_until = $3 WHERE id = $1 AND"
            " (lease_owner IS NULL OR lease_owner = $2 OR lease_until <= $4)"
        )
        status = await self._db.run(lambda c: c.execute(sql, batch_id, owner, until, now))
        return str(status).endswith(" 1")

    async def aclose(self) -> None:
        return None  # the pool is the broker's


async def open_postgres_job_store(db: PostgresDatabase) -> PostgresJobStore:
    """The job store over ``db``, its tables created when missing."""
    store = PostgresJobStore(db)
    await store.create_tables()
    return store
