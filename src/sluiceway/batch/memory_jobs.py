"""The in-process job store, for the memory broker (the demo, tests): nothing outlives the
process, as nothing of the memory broker does."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sluiceway.batch.base import FileInfo, Page
from sluiceway.batch.status import BatchJob

__all__ = ["MemoryJobStore", "page_after"]


def page_after(jobs: list[BatchJob], after: str | None, limit: int) -> Page:
    """``limit`` jobs of ``jobs`` (newest first) after the one with id ``after``."""
    if after is not None:
        ids = [j.id for j in jobs]
        jobs = jobs[ids.index(after) + 1 :] if after in ids else []
    return Page(jobs[:limit], len(jobs) > limit)


def _newest_first(job: BatchJob) -> tuple[int, str]:
    return (-job.created_at, job.id)


class MemoryJobStore:
    """A :class:`~sluiceway.batch.base.JobStore` in dictionaries."""

    def __init__(self) -> None:
        self._files: dict[str, FileInfo] = {}
        self._jobs: dict[str, BatchJob] = {}
        self._cancels: dict[str, int] = {}
        self._done: dict[str, set[int]] = {}
        self._leases: dict[str, tuple[str, float]] = {}

    async def put_file(self, info: FileInfo) -> None:
        self._files[info.id] = info

    async def get_file(self, tenant: str, file_id: str) -> FileInfo | None:
        info = self._files.get(file_id)
        return info if info is not None and info.tenant == tenant else None

    async def list_files(self, tenant: str) -> list[FileInfo]:
        mine = [f for f in self._files.values() if f.tenant == tenant]
        return sorted(mine, key=lambda f: (-f.created_at, f.id))

    async def delete_file(self, tenant: str, file_id: str) -> bool:
        if await self.get_file(tenant, file_id) is None:
            return False
        del self._files[file_id]
        return True

    def _view(self, job: BatchJob) -> BatchJob:
        return dataclasses.replace(job, cancel_requested_at=self._cancels.get(job.id))

    async def put_batch(self, job: BatchJob) -> None:
        self._jobs[job.id] = dataclasses.replace(job, cancel_requested_at=None)

    async def get_batch(self, tenant: str, batch_id: str) -> BatchJob | None:
        job = self._jobs.get(batch_id)
        return self._view(job) if job is not None and job.tenant == tenant else None

    async def list_batches(self, tenant: str, *, after: str | None, limit: int) -> Page:
        mine = sorted((j for j in self._jobs.values() if j.tenant == tenant), key=_newest_first)
        return page_after([self._view(j) for j in mine], after, limit)

    async def active_batches(self) -> list[BatchJob]:
        return [self._view(j) for j in self._jobs.values() if not j.terminal]

    async def request_cancel(self, tenant: str, batch_id: str, at: int) -> BatchJob | None:
        if await self.get_batch(tenant, batch_id) is None:
            return None
        self._cancels.setdefault(batch_id, at)
        return await self.get_batch(tenant, batch_id)

    async def commit_lines(self, job: BatchJob, numbers: Sequence[int]) -> None:
        self._done.setdefault(job.id, set()).update(numbers)
        await self.put_batch(job)

    async def done_lines(self, batch_id: str, numbers: Sequence[int]) -> set[int]:
        return self._done.get(batch_id, set()).intersection(numbers)

    async def take_lease(self, batch_id: str, owner: str, *, until: float, now: float) -> bool:
        held = self._leases.get(batch_id)
        if held is not None and held[0] != owner and held[1] > now:
            return False
        self._leases[batch_id] = (owner, until)
        return True

    async def aclose(self) -> None:
        return None
