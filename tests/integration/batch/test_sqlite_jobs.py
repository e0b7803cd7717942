"""The SQLite job store passes the job-store conformance, and keeps its state across a
reopen (a restarted coordinator)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from jobstore_conformance import ALL, job

from sluiceway.batch.base import JobStore
from sluiceway.batch.sqlite_jobs import open_sqlite_job_store


@pytest.mark.parametrize("check", ALL, ids=lambda c: c.__name__)
async def test_conformance(tmp_path: Path, check: Callable[[JobStore], Awaitable[None]]) -> None:
    store = await open_sqlite_job_store(str(tmp_path / "db.sqlite"))
    try:
        await check(store)
    finally:
        await store.aclose()


async def test_a_reopened_store_has_the_jobs_and_done_lines(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite")
    store = await open_sqlite_job_store(path)
    await store.commit_lines(job("batch_r"), [2])
    await store.aclose()
    again = await open_sqlite_job_store(path)
    try:
        assert await again.get_batch("a", "batch_r") == job("batch_r")
        assert await again.done_lines("batch_r", [1, 2]) == {2}
    finally:
        await again.aclose()
