"""The job store on the Redis broker's server, through its client.

Keys (``<id>`` a file or batch id):

- ``batch:file:<id>``: STRING, the file's metadata (JSON); ``batch:files:<tenant>``: ZSET of
  the tenant's file ids scored by creation time;
- ``batch:job:<id>``: STRING, the job (JSON); ``batch:job:<id>:cancel``: STRING, the time a
  cancel was asked; ``batch:job:<id>:done``: SET of the line numbers whose result is written;
  ``batch:job:<id>:lease``: HASH ``owner``, ``until`` (one replica runs a batch);
- ``batch:jobs:<tenant>``: ZSET of the tenant's batch ids by creation time; ``batch:active``:
  SET of the ids not in a final status.

A commit (done lines and the job) is one ``MULTI``. The lease is one script; its ``now`` comes
from the caller (docs/design-rules.md rule 1).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from sluiceway.batch.base import FileInfo, Page
from sluiceway.batch.status import BatchJob

__all__ = ["RedisJobStore"]

_LEASE: Final = """
local owner = redis.call('HGET', KEYS[1], 'owner')
local untl = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if owner and owner ~= ARGV[1] and untl > tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'until', ARGV[2])
return 1
"""
ACTIVE: Final = "batch:active"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _file(file_id: str) -> str:
    return f"batch:file:{file_id}"


def _job(batch_id: str) -> str:
    return f"batch:job:{batch_id}"


class RedisJobStore:
    """A :class:`~sluiceway.batch.base.JobStore` in Redis (the broker's client, not owned)."""

    def __init__(self, client: Any) -> None:
        self._r = client
        self._lease = client.register_script(_LEASE)

    async def put_file(self, info: FileInfo) -> None:
        pipe = self._r.pipeline(transaction=True)
        pipe.set(_file(info.id), json.dumps(info.to_doc()))
        pipe.zadd(f"batch:files:{info.tenant}", {info.id: info.created_at})
        await pipe.execute()

    async def get_file(self, tenant: str, file_id: str) -> FileInfo | None:
        raw = await self._r.get(_file(file_id))
        info = None if raw is None else FileInfo.from_doc(json.loads(raw))
        return info if info is not None and info.tenant == tenant else None

    async def list_files(self, tenant: str) -> list[FileInfo]:
        ids = await self._r.zrevrange(f"batch:files:{tenant}", 0, -1)
        found = [await self.get_file(tenant, _text(i)) for i in ids]
        return [f for f in found if f is not None]

    async def delete_file(self, tenant: str, file_id: str) -> bool:
        if await self.get_file(tenant, file_id) is None:
            return False
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(_file(file_id))
        pipe.zrem(f"batch:files:{tenant}", file_id)
        await pipe.execute()
        return True

    def _queue_put(self, pipe: Any, job: BatchJob) -> None:
        pipe.set(_job(job.id), job.to_json())
        pipe.zadd(f"batch:jobs:{job.tenant}", {job.id: job.created_at})
        if job.terminal:
            pipe.srem(ACTIVE, job.id)
        else:
            pipe.sadd(ACTIVE, job.id)

    async def put_batch(self, job: BatchJob) -> None:
        pipe = self._r.pipeline(transaction=True)
        self._queue_put(pipe, job)
        await pipe.execute()

    async def _load(self, batch_id: str) -> BatchJob | None:
        raw, cancel = await self._r.mget(_job(batch_id), f"{_job(batch_id)}:cancel")
        if raw is None:
            return None
        return BatchJob.from_json(raw, cancel_requested_at=None if cancel is None else int(cancel))

    async def get_batch(self, tenant: str, batch_id: str) -> BatchJob | None:
        job = await self._load(batch_id)
        return job if job is not None and job.tenant == tenant else None

    async def list_batches(self, tenant: str, *, after: str | None, limit: int) -> Page:
        key = f"batch:jobs:{tenant}"
        start = 0
        if after is not None:
            rank = await self._r.zrevrank(key, after)
            if rank is None:
                return Page([], False)
            start = int(rank) + 1
        ids = await self._r.zrevrange(key, start, start + limit)
        jobs = [await self.get_batch(tenant, _text(i)) for i in ids[:limit]]
        return Page([j for j in jobs if j is not None], len(ids) > limit)

    async def active_batches(self) -> list[BatchJob]:
        jobs = [await self._load(_text(i)) for i in await self._r.smembers(ACTIVE)]
        return [j for j in jobs if j is not None and not j.terminal]

    async def request_cancel(self, tenant: str, batch_id: str, at: int) -> BatchJob | None:
        if await self.get_batch(tenant, batch_id) is None:
            return None
        await self._r.set(f"{_job(batch_id)}:cancel", at, nx=True)
        return await self.get_batch(tenant, batch_id)

    async def commit_lines(self, job: BatchJob, numbers: Sequence[int]) -> None:
        pipe = self._r.pipeline(transaction=True)
        if numbers:
            pipe.sadd(f"{_job(job.id)}:done", *numbers)
        self._queue_put(pipe, job)
        await pipe.execute()

    async def done_lines(self, batch_id: str, numbers: Sequence[int]) -> set[int]:
        if not numbers:
            return set()
        flags = await self._r.smismember(f"{_job(batch_id)}:done", list(numbers))
        return {n for n, flag in zip(numbers, flags, strict=True) if flag}

    async def take_lease(self, batch_id: str, owner: str, *, until: float, now: float) -> bool:
        keys = [f"{_job(batch_id)}:lease"]
        return bool(await self._lease(keys=keys, args=[owner, repr(until), repr(now)]))

    async def aclose(self) -> None:
        return None  # the client is the broker's
