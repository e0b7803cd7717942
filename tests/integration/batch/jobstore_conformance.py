"""What every job store promises, run against each (memory, SQLite, Redis)."""

from __future__ import annotations

import dataclasses

from sluiceway.batch.base import FileInfo, JobStore
from sluiceway.batch.status import BatchJob, BatchStatus, RequestCounts


def job(batch_id: str, tenant: str = "a", created: int = 100) -> BatchJob:
    return BatchJob(
        id=batch_id,
        tenant=tenant,
        input_file_id="file-1",
        endpoint="/v1/completions",
        completion_window="24h",
        created_at=created,
        expires_at=created + 86400,
        queue="team-batch",
        counts=RequestCounts(total=3),
    )


async def files_are_per_tenant(store: JobStore) -> None:
    info = FileInfo("file-1", "a", "in.jsonl", "batch", 10, 5, lines=2, urls=("/v1/completions",))
    await store.put_file(info)
    await store.put_file(dataclasses.replace(info, id="file-2", created_at=6))
    assert await store.get_file("a", "file-1") == info
    assert await store.get_file("b", "file-1") is None
    assert [f.id for f in await store.list_files("a")] == ["file-2", "file-1"]
    assert await store.list_files("b") == []
    assert not await store.delete_file("b", "file-1")
    assert await store.delete_file("a", "file-1")
    assert await store.get_file("a", "file-1") is None


async def batches_page_newest_first(store: JobStore) -> None:
    for i in range(5):
        await store.put_batch(job(f"batch_{i}", created=100 + i))
    await store.put_batch(job("batch_other", tenant="b"))
    first = await store.list_batches("a", after=None, limit=2)
    assert [j.id for j in first.jobs] == ["batch_4", "batch_3"] and first.has_more
    rest = await store.list_batches("a", after="batch_3", limit=5)
    assert [j.id for j in rest.jobs] == ["batch_2", "batch_1", "batch_0"]
    assert not rest.has_more
    assert (await store.list_batches("a", after="batch_other", limit=5)).jobs == []
    assert await store.get_batch("b", "batch_1") is None
    assert (await store.get_batch("a", "batch_1")) == job("batch_1", created=101)


async def a_cancel_request_survives_the_runners_saves(store: JobStore) -> None:
    await store.put_batch(job("batch_c"))
    assert await store.request_cancel("b", "batch_c", 7) is None
    asked = await store.request_cancel("a", "batch_c", 7)
    assert asked is not None and asked.cancel_requested_at == 7
    assert asked.shown_status is BatchStatus.CANCELLING
    await store.request_cancel("a", "batch_c", 9)  # the first time wins
    await store.put_batch(job("batch_c").moved(BatchStatus.IN_PROGRESS, 8))
    again = await store.get_batch("a", "batch_c")
    assert again is not None and again.cancel_requested_at == 7
    assert again.status is BatchStatus.IN_PROGRESS


async def done_lines_commit_with_the_job(store: JobStore) -> None:
    first = job("batch_d")
    await store.put_batch(first)
    assert [j.id for j in await store.active_batches()] == ["batch_d"]
    counted = dataclasses.replace(first, counts=RequestCounts(3, 2, 0), output_bytes=40)
    await store.commit_lines(counted, [1, 3])
    await store.commit_lines(counted, [3])  # again: nothing changes
    assert await store.done_lines("batch_d", [1, 2, 3]) == {1, 3}
    assert await store.done_lines("batch_x", [1]) == set()
    assert await store.get_batch("a", "batch_d") == counted
    finished = counted.moved(BatchStatus.IN_PROGRESS, 1).moved(BatchStatus.EXPIRED, 2)
    await store.commit_lines(finished, [2])
    assert await store.active_batches() == []


async def one_owner_holds_the_lease(store: JobStore) -> None:
    await store.put_batch(job("batch_l"))
    assert await store.take_lease("batch_l", "one", until=110.0, now=100.0)
    assert not await store.take_lease("batch_l", "two", until=120.0, now=105.0)
    assert await store.take_lease("batch_l", "one", until=130.0, now=106.0)  # renewed
    assert await store.take_lease("batch_l", "two", until=150.0, now=131.0)  # lapsed


ALL = (
    files_are_per_tenant,
    batches_page_newest_first,
    a_cancel_request_survives_the_runners_saves,
    done_lines_commit_with_the_job,
    one_owner_holds_the_lease,
)
