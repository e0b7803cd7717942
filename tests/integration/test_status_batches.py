"""``sluiceway status`` lists the unfinished batches from the broker's database."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.sqlite_jobs import open_sqlite_job_store
from sluiceway.batch.status import BatchJob, BatchStatus, RequestCounts
from sluiceway.broker.memory import MemoryBroker
from sluiceway.status import StatusReport, render
from sluiceway.status_batches import active_batch_rows


def job(batch_id: str, status: BatchStatus, created: int) -> BatchJob:
    return BatchJob(
        id=batch_id,
        tenant="premium",
        input_file_id="file-1",
        endpoint="/v1/completions",
        completion_window="24h",
        created_at=created,
        expires_at=created + 86400,
        queue="team-batch",
        status=status,
        counts=RequestCounts(total=10, completed=3, failed=1),
        ingested=6,
    )


async def populate(path: Path) -> int:
    store = await open_sqlite_job_store(str(path))
    now = int(time.time())
    try:
        await store.put_batch(job("batch_b", BatchStatus.IN_PROGRESS, now - 10))
        await store.put_batch(job("batch_a", BatchStatus.IN_PROGRESS, now - 20))
        done = job("batch_done", BatchStatus.IN_PROGRESS, now)
        await store.put_batch(dataclasses.replace(done, status=BatchStatus.COMPLETED))
        await store.request_cancel("premium", "batch_b", now)
    finally:
        await store.aclose()
    return now


async def test_rows_oldest_first_with_progress(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    now = await populate(path)
    rows = await active_batch_rows("sqlite", MemoryBroker(), f"sqlite:///{path}", float(now))
    assert [(r.id, r.status) for r in rows] == [
        ("batch_a", "in_progress"),
        ("batch_b", "cancelling"),
    ]
    assert (rows[0].completed, rows[0].failed, rows[0].queued, rows[0].total) == (3, 1, 6, 10)
    assert 86300 < rows[0].expires_in < 86400
    assert await active_batch_rows("memory", MemoryBroker(), None, 0.0) == []
    out = io.StringIO()
    Console(file=out, width=160).print(render(StatusReport(0.0, (), (), (), tuple(rows))))
    assert "batches" in out.getvalue() and "4 / 10" in out.getvalue()


def test_the_command_shows_them(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    asyncio.run(populate(path))
    args = [sys.executable, "-m", "sluiceway", "status", "team-batch", "--transport", "sqlite"]
    args += ["--url", f"sqlite:///{path}", "--json"]
    ran = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    batches = json.loads(ran.stdout)["batches"]
    assert [b["id"] for b in batches] == ["batch_a", "batch_b"]


async def test_batches_that_cannot_be_read_leave_the_rest_of_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Denied(MemoryJobStore):
        async def active_batches(self) -> list[BatchJob]:
            raise PermissionError("NOPERM batch:active")

    async def denied(*args: object) -> MemoryJobStore:
        return Denied()

    monkeypatch.setattr("sluiceway.batch.stores.open_job_store", denied)
    assert await active_batch_rows("memory", MemoryBroker(), None, 0.0) == []
