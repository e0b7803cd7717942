"""The PostgreSQL job store passes the job-store conformance in the broker's database."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from jobstore_conformance import ALL, job

from sluiceway.batch.base import JobStore
from sluiceway.batch.postgres_jobs import open_postgres_job_store
from sluiceway.broker.postgres_db import PostgresDatabase


@pytest.mark.parametrize("check", ALL, ids=lambda c: c.__name__)
async def test_conformance(postgres_dsn: str, check: Callable[[JobStore], Awaitable[None]]) -> None:
    db = PostgresDatabase(postgres_dsn)
    await db.open()
    try:
        await check(await open_postgres_job_store(db))
    finally:
        await db.aclose()


async def test_opening_twice_keeps_the_tables(postgres_dsn: str) -> None:
    db = PostgresDatabase(postgres_dsn)
    await db.open()
    try:
        store = await open_postgres_job_store(db)
        await store.commit_lines(job("batch_p"), [1])
        again = await open_postgres_job_store(db)
        assert await again.done_lines("batch_p", [1, 2]) == {1}
    finally:
        await db.aclose()
