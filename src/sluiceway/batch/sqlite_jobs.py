"""The job store in the SQLite broker's database file (its own connection, as the SQLite quota
store has), one immediate transaction per call."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Final

from sluiceway.batch.base import FileInfo, Page
from sluiceway.batch.status import TERMINAL, BatchJob
from sluiceway.broker.sqlite_db import SqliteRunner, open_database

__all__ = ["SqliteJobStore", "open_sqlite_job_store"]

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS batch_files (
  id TEXT PRIMARY KEY, tenant TEXT NOT NULL, created_at INTEGER NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS batch_files_tenant ON batch_files (tenant, created_at);
CREATE TABLE IF NOT EXISTS batch_jobs (
  id TEXT PRIMARY KEY, tenant TEXT NOT NULL, created_at INTEGER NOT NULL,
  terminal INTEGER NOT NULL, doc TEXT NOT NULL, cancel_at INTEGER,
  lease_owner TEXT, lease_until REAL);
CREATE INDEX IF NOT EXISTS batch_jobs_tenant ON batch_jobs (tenant, created_at);
CREATE TABLE IF NOT EXISTS batch_done (
  batch TEXT NOT NULL, line INTEGER NOT NULL, PRIMARY KEY (batch, line)) WITHOUT ROWID;
"""
_TERMINAL: Final = tuple(str(s) for s in TERMINAL)
_JOB: Final = "SELECT doc, cancel_at FROM batch_jobs"


def _job(row: tuple[str, int | None]) -> BatchJob:
    return BatchJob.from_json(row[0], cancel_requested_at=row[1])


class SqliteJobStore:
    """A :class:`~sluiceway.batch.base.JobStore` over one SQLite file."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.db = SqliteRunner(conn, name="sqlite-batch")

    async def put_file(self, info: FileInfo) -> None:
        def put_file(c: sqlite3.Connection) -> None:
            c.execute(
                "INSERT OR REPLACE INTO batch_files VALUES (?, ?, ?, ?)",
                (info.id, info.tenant, info.created_at, json.dumps(info.to_doc())),
            )

        await self.db.run(put_file)

    async def get_file(self, tenant: str, file_id: str) -> FileInfo | None:
        def get_file(c: sqlite3.Connection) -> FileInfo | None:
            query = "SELECT doc FROM batch_files WHERE id = ? AND tenant = ?"
            row = c.execute(query, (file_id, tenant)).fetchone()
            return None if row is None else FileInfo.from_doc(json.loads(row[0]))

        return await self.db.run(get_file)

    async def list_files(self, tenant: str) -> list[FileInfo]:
        def list_files(c: sqlite3.Connection) -> list[FileInfo]:
            query = "SELECT doc FROM batch_files WHERE tenant = ? ORDER BY created_at DESC, id"
            return [FileInfo.from_doc(json.loads(r[0])) for r in c.execute(query, (tenant,))]

        return await self.db.run(list_files)

    async def delete_file(self, tenant: str, file_id: str) -> bool:
        def delete_file(c: sqlite3.Connection) -> bool:
            query = "DELETE FROM batch_files WHERE id = ? AND tenant = ?"
            return c.execute(query, (file_id, tenant)).rowcount == 1

        return await self.db.run(delete_file)

    @staticmethod
    def _put(c: sqlite3.Connection, job: BatchJob) -> None:
        c.execute(
            "INSERT INTO batch_jobs (id, tenant, created_at, terminal, doc) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET terminal = excluded.terminal, doc = excluded.doc",
            (job.id, job.tenant, job.created_at, int(job.terminal), job.to_json()),
        )

    async def put_batch(self, job: BatchJob) -> None:
        def put_batch(c: sqlite3.Connection) -> None:
            self._put(c, job)

        await self.db.run(put_batch)

    async def get_batch(self, tenant: str, batch_id: str) -> BatchJob | None:
        def get_batch(c: sqlite3.Connection) -> BatchJob | None:
            row = c.execute(f"{_JOB} WHERE id = ? AND tenant = ?", (batch_id, tenant)).fetchone()
            return None if row is None else _job(row)

        return await self.db.run(get_batch)

    async def list_batches(self, tenant: str, *, after: str | None, limit: int) -> Page:
        def list_batches(c: sqlite3.Connection) -> Page:
            where = "tenant = :tenant"
            args: dict[str, object] = {"tenant": tenant, "limit": limit + 1}
            if after is not None:
                found = c.execute(
                    "SELECT created_at FROM batch_jobs WHERE id = ? AND tenant = ?", (after, tenant)
                ).fetchone()
                if found is None:
                    return Page([], False)
                where += " AND (created_at < :at OR (created_at = :at AND id > :after))"
                args.update({"at": found[0], "after": after})
            query = f"{_JOB} WHERE {where} ORDER BY created_at DESC, id LIMIT :limit"
            rows = c.execute(query, args).fetchall()
            return Page([_job(r) for r in rows[:limit]], len(rows) > limit)

        return await self.db.run(list_batches)

    async def active_batches(self) -> list[BatchJob]:
        def active_batches(c: sqlite3.Connection) -> list[BatchJob]:
            return [_job(r) for r in c.execute(f"{_JOB} WHERE terminal = 0")]

        return await self.db.run(active_batches)

    async def request_cancel(self, tenant: str, batch_id: str, at: int) -> BatchJob | None:
        def request_cancel(c: sqlite3.Connection) -> BatchJob | None:
            c.execute(
                "UPDATE batch_jobs SET cancel_at = coalesce(cancel_at, ?)"
                " WHERE id = ? AND tenant = ?",
                (at, batch_id, tenant),
            )
            row = c.execute(f"{_JOB} WHERE id = ? AND tenant = ?", (batch_id, tenant)).fetchone()
            return None if row is None else _job(row)

        return await self.db.run(request_cancel)

    async def commit_lines(self, job: BatchJob, numbers: Sequence[int]) -> None:
        def commit_lines(c: sqlite3.Connection) -> None:
            c.executemany(
                "INSERT OR IGNORE INTO batch_done VALUES (?, ?)", [(job.id, n) for n in numbers]
            )
            self._put(c, job)

        await self.db.run(commit_lines)

    async def done_lines(self, batch_id: str, numbers: Sequence[int]) -> set[int]:
        def done_lines(c: sqlite3.Connection) -> set[int]:
            query = "SELECT 1 FROM batch_done WHERE batch = ? AND line = ?"
            return {n for n in numbers if c.execute(query, (batch_id, n)).fetchone()}

        return await self.db.run(done_lines)

    async def take_lease(self, batch_id: str, owner: str, *, until: float, now: float) -> bool:
        def take_lease(c: sqlite3.Connection) -> bool:
            updated = c.execute(
                "UPDATE batch_jobs SET lease_owner = ?, lease_until = ? WHERE id = ? AND"
                " (lease_owner IS NULL OR lease_owner = ? OR lease_until <= ?)",
                (owner, until, batch_id, owner, now),
            )
            return updated.rowcount == 1

        return await self.db.run(take_lease)

    async def aclose(self) -> None:
        await self.db.aclose()


async def open_sqlite_job_store(path: str) -> SqliteJobStore:
    """The job store in the database file at ``path`` (tables created when missing)."""
    return SqliteJobStore(await open_database(path, SCHEMA))
