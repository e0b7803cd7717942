"""A batch's runner without a processor: cancel, expiry, and a restart that finds its lines
already queued (no line queued twice, none written twice)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from batch_rig import input_lines, read_lines
from jobstore_conformance import job

from sluiceway.batch.collector import error_file_name
from sluiceway.batch.local_files import LocalFileStore
from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.runner import BatchRunner, RunnerParts
from sluiceway.batch.status import BatchJob, BatchStatus, RequestCounts
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.wire import decode_envelope

LINES = 20


async def until(check: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def setup(tmp_path: Path, *, window: float = 86400) -> tuple[RunnerParts, BatchJob]:
    clock = RealClock(scale=10.0)
    parts = RunnerParts(
        broker=MemoryBroker(),
        jobs=MemoryJobStore(),
        files=LocalFileStore(tmp_path),
        clock=clock,
        quota_attribute="team",
        notify=True,
    )

    async def body():  # type: ignore[no-untyped-def]
        yield input_lines(LINES)

    await parts.files.write("file-1", body())
    now = int(clock.now())
    start = dataclasses.replace(
        job("batch_r", created=now),
        expires_at=int(now + window),
        counts=RequestCounts(total=LINES),
    )
    await parts.jobs.put_batch(start)
    return parts, start


def error_codes(tmp_path: Path) -> list[str]:
    lines = read_lines((tmp_path / error_file_name("batch_r")).read_bytes())
    assert sorted(line["custom_id"] for line in lines) == sorted(f"req-{i}" for i in range(LINES))
    return sorted({line["error"]["code"] for line in lines})


async def test_a_cancel_withdraws_every_queued_line(tmp_path: Path) -> None:
    parts, start = await setup(tmp_path)
    runner = BatchRunner(start, parts)
    task = asyncio.create_task(runner.run())
    await until(lambda: _backlog(parts, LINES))
    await parts.jobs.request_cancel("a", "batch_r", 5)
    runner.poke()
    final = await asyncio.wait_for(task, 30)
    assert final.status is BatchStatus.CANCELLED
    assert (final.counts.completed, final.counts.failed) == (0, LINES)
    assert error_codes(tmp_path) == ["batch_cancelled"]
    assert await parts.broker.backlog("team-batch") == 0
    assert final.error_file_id is not None and final.output_file_id is None


async def test_the_windows_end_writes_the_rest_expired(tmp_path: Path) -> None:
    parts, start = await setup(tmp_path, window=3)
    final = await asyncio.wait_for(BatchRunner(start, parts).run(), 30)
    assert final.status is BatchStatus.EXPIRED
    assert final.stamps["expired_at"] >= start.expires_at
    assert error_codes(tmp_path) == ["batch_expired"]
    assert await parts.broker.backlog("team-batch") == 0


async def test_a_restart_does_not_queue_lines_twice(tmp_path: Path) -> None:
    parts, start = await setup(tmp_path)
    first = asyncio.create_task(BatchRunner(start, parts).run())
    await until(lambda: _backlog(parts, LINES))
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    stored = await parts.jobs.get_batch("a", "batch_r")
    assert stored is not None and stored.status is BatchStatus.IN_PROGRESS
    # a crash after the enqueue, before its commit
    await parts.jobs.put_batch(dataclasses.replace(stored, ingested=0))
    again = BatchRunner(dataclasses.replace(stored, ingested=0), parts)
    second = asyncio.create_task(again.run())

    async def requeued() -> bool:
        saved = await parts.jobs.get_batch("a", "batch_r")
        return saved is not None and saved.ingested == LINES

    await until(requeued)
    assert await parts.broker.backlog("team-batch") == LINES
    await parts.jobs.request_cancel("a", "batch_r", 5)
    again.poke()
    final = await asyncio.wait_for(second, 30)
    assert final.counts.failed == LINES
    assert error_codes(tmp_path) == ["batch_cancelled"]


async def _backlog(parts: RunnerParts, count: int) -> bool:
    return await parts.broker.backlog("team-batch") == count


async def test_an_unreadable_input_file_fails_the_batch(tmp_path: Path) -> None:
    parts, start = await setup(tmp_path)
    await parts.files.delete("file-1")
    final = await asyncio.wait_for(BatchRunner(start, parts).run(), 30)
    assert final.status is BatchStatus.FAILED and final.stamps["failed_at"] > 0
    assert final.errors[0]["code"] == "input_file_unreadable"
    assert await parts.broker.backlog("team-batch") == 0


async def test_lines_sharing_a_system_prompt_are_queued_together(tmp_path: Path) -> None:
    parts, start = await setup(tmp_path)
    docs = [
        {
            "custom_id": f"c{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "sim-model",
                "messages": [
                    {"role": "system", "content": f"prompt {i % 3}"},
                    {"role": "user", "content": str(i)},
                ],
            },
        }
        for i in range(12)
    ]

    async def body():  # type: ignore[no-untyped-def]
        yield b"".join(json.dumps(d).encode() + b"\n" for d in docs)

    await parts.files.write("file-chat", body())
    chat = dataclasses.replace(start, input_file_id="file-chat", counts=RequestCounts(total=12))
    await parts.jobs.put_batch(chat)
    task = asyncio.create_task(BatchRunner(chat, parts).run())
    await until(lambda: _backlog(parts, 12))
    entries = await parts.broker.peek("team-batch", 20)
    order = [int(decode_envelope(e.member).id.rpartition("-")[2]) - 1 for e in entries]
    groups = [i % 3 for i in order]
    assert groups == sorted(groups)  # each prompt's lines one after another, first seen first
    assert max(e.score for e in entries) <= chat.expires_at
    await parts.jobs.request_cancel("a", "batch_r", 5)
    final = await asyncio.wait_for(task, 30)
    assert final.status is BatchStatus.CANCELLED
