"""The Batch API's operations: uploads checked line by line, batches checked against their
file, tenants kept apart, pages, and batches resumed at start."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from batch_rig import input_lines

from sluiceway.batch.local_files import LocalFileStore
from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.runner import RunnerParts
from sluiceway.batch.service import BatchRefused, BatchService
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock


def service(tmp_path: Path) -> BatchService:
    parts = RunnerParts(
        broker=MemoryBroker(),
        jobs=MemoryJobStore(),
        files=LocalFileStore(tmp_path),
        clock=RealClock(),
        quota_attribute="team",
        notify=True,
    )
    return BatchService(parts, place=lambda tenant, model: f"queue-{tenant}")


async def body(data: bytes, size: int = 7) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def test_an_upload_error_names_its_line_and_keeps_nothing(tmp_path: Path) -> None:
    api = service(tmp_path)
    bad = input_lines(3) + b'{"custom_id": "x", "method": "GET"}\n'
    with pytest.raises(BatchRefused) as err:
        await api.create_file("t", filename="in.jsonl", purpose="batch", body=body(bad))
    assert err.value.status == 400 and "line 4: method must be POST" in err.value.message
    duplicate = input_lines(2) + input_lines(1)
    with pytest.raises(BatchRefused, match="line 3: duplicate custom_id 'req-0'"):
        await api.create_file("t", filename="x", purpose="batch", body=body(duplicate))
    with pytest.raises(BatchRefused, match="purpose"):
        await api.create_file("t", filename="x", purpose="fine-tune", body=body(b""))
    assert await api.files("t") == []
    assert await asyncio.to_thread(os.listdir, tmp_path) == []


async def test_files_and_batches_are_the_tenants_own(tmp_path: Path) -> None:
    api = service(tmp_path)
    info = await api.create_file(
        "t", filename="in.jsonl", purpose="batch", body=body(input_lines(2))
    )
    assert (info.lines, info.urls, info.models) == (2, ("/v1/completions",), ("sim-model",))
    chunks = [c async for c in await api.content("t", info.id)]
    assert b"".join(chunks) == input_lines(2)
    with pytest.raises(BatchRefused) as err:
        await api.file("u", info.id)
    assert err.value.status == 404
    with pytest.raises(BatchRefused, match="lines ask for /v1/completions"):
        await api.create_batch(
            "t", input_file_id=info.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
    with pytest.raises(BatchRefused, match="24h"):
        await api.create_batch(
            "t", input_file_id=info.id, endpoint="/v1/completions", completion_window="1h"
        )
    with pytest.raises(BatchRefused) as other:
        await api.create_batch(
            "u", input_file_id=info.id, endpoint="/v1/completions", completion_window="24h"
        )
    assert other.value.status == 404
    made = await api.create_batch(
        "t",
        input_file_id=info.id,
        endpoint="/v1/completions",
        completion_window="24h",
        metadata={"k": "v"},
    )
    assert made.queue == "queue-t" and made.model == "sim-model" and made.counts.total == 2
    with pytest.raises(BatchRefused) as err:
        await api.batch("u", made.id)
    assert err.value.status == 404
    with pytest.raises(BatchRefused) as err:
        await api.cancel("u", made.id)
    assert err.value.status == 404
    cancelled = await api.cancel("t", made.id)
    assert json.loads(json.dumps(cancelled.to_openai()))["status"] in ("cancelling", "cancelled")
    page = await api.batches("t", after=None, limit=1)
    assert [j.id for j in page.jobs] == [made.id] and not page.has_more
    with pytest.raises(BatchRefused, match="limit"):
        await api.batches("t", after=None, limit=0)
    with pytest.raises(BatchRefused) as in_use:
        await api.delete_file("t", info.id)  # the batch (cancelling) still reads it
    assert in_use.value.status == 409
    spare = await api.create_file("t", filename="b", purpose="batch", body=body(input_lines(1)))
    await api.delete_file("t", spare.id)
    with pytest.raises(BatchRefused) as gone:
        await api.delete_file("t", spare.id)
    assert gone.value.status == 404
    await api.aclose()


async def test_start_resumes_unfinished_batches(tmp_path: Path) -> None:
    first = service(tmp_path)
    info = await first.create_file("t", filename="a", purpose="batch", body=body(input_lines(2)))
    made = await first.create_batch(
        "t", input_file_id=info.id, endpoint="/v1/completions", completion_window="24h"
    )
    await first.aclose()
    assert first.running == 0
    again = BatchService(first._p, place=lambda tenant, model: "q")  # a restarted coordinator
    await again.start()
    assert again.running == 1
    assert (await again.batch("t", made.id)).status.value in ("validating", "in_progress")
    await again.aclose()
