"""The Batch API's operations for one coordinator, and the runners of its batches.

Files: an upload is checked line by line while it streams to the file store (an error names
its line and nothing is kept). Batches: a new batch is stored ``validating`` and run at once;
at start every batch not in a final status is resumed (a restarted coordinator picks up where
the last commit left off), and every ``RESCAN_SECONDS`` batches whose runner's lease lapsed
(another replica stopped) are taken over.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

from sluiceway.batch.base import FileInfo, Page
from sluiceway.batch.lines import SUPPORTED_URLS, BodyCheck, LineValidator
from sluiceway.batch.metrics import BatchMetrics
from sluiceway.batch.runner import BatchRunner, RunnerParts
from sluiceway.batch.status import BatchJob, RequestCounts

__all__ = ["COMPLETION_WINDOWS", "BatchRefused", "BatchService"]

log = logging.getLogger(__name__)

COMPLETION_WINDOWS: Final = {"24h": 24 * 3600}
LEASE_SECONDS: Final = 60.0  # wall; renewed by each rescan
RESCAN_SECONDS: Final = 10.0  # wall
MAX_METADATA: Final = 16
# (tenant, model) -> the batch-tier queue of the tenant's requests
Placement = Callable[[str, str], str]


class BatchRefused(Exception):
    """A request the Batch API refuses: HTTP status, error code, message, offending field."""

    def __init__(self, status: int, code: str, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.param = status, code, message, param


def _not_found(kind: str, ident: str) -> BatchRefused:
    return BatchRefused(404, "not_found", f"no {kind} {ident!r}")


class BatchService:
    """Files and batches of every tenant; runs the batches this replica holds a lease on."""

    def __init__(
        self, parts: RunnerParts, *, place: Placement, check_body: BodyCheck | None = None
    ) -> None:
        self._p = parts
        self._place = place
        self._check = check_body
        self._owner = secrets.token_hex(8)
        self._runners: dict[str, tuple[BatchRunner, asyncio.Task[BatchJob]]] = {}
        self._rescan: asyncio.Task[None] | None = None

    # -- files -------------------------------------------------------------------------

    async def create_file(
        self, tenant: str, *, filename: str, purpose: str, body: AsyncIterator[bytes]
    ) -> FileInfo:
        if purpose != "batch":
            raise BatchRefused(400, "invalid_purpose", "purpose must be batch", param="purpose")
        file_id = f"file-{secrets.token_hex(12)}"
        checker = LineValidator(check_body=self._check)
        try:
            size = await self._p.files.write(file_id, _checked(body, checker))
        except ValueError as exc:  # LineError: names its line
            raise BatchRefused(400, "invalid_file", str(exc), param="file") from None
        info = FileInfo(
            file_id,
            tenant,
            filename,
            purpose,
            size,
            int(self._p.clock.now()),
            lines=checker.count,
            urls=tuple(sorted(checker.urls)),
            models=tuple(sorted(checker.models)),
        )
        await self._p.jobs.put_file(info)
        return info

    async def file(self, tenant: str, file_id: str) -> FileInfo:
        info = await self._p.jobs.get_file(tenant, file_id)
        if info is None:
            raise _not_found("file", file_id)
        return info

    async def files(self, tenant: str) -> list[FileInfo]:
        return await self._p.jobs.list_files(tenant)

    async def content(self, tenant: str, file_id: str) -> AsyncIterator[bytes]:
        """The file's bytes (only its committed size: a crash's leftover is not served)."""
        info = await self.file(tenant, file_id)
        return _limited(self._p.files.read(file_id), info.bytes)

    async def delete_file(self, tenant: str, file_id: str) -> None:
        """Delete a file, unless a batch still running reads it (409: its runner needs it)."""
        await self.file(tenant, file_id)
        active = await self._p.jobs.active_batches()
        if any(j.input_file_id == file_id and j.tenant == tenant for j in active):
            raise BatchRefused(409, "file_in_use", f"a running batch reads {file_id!r}")
        if not await self._p.jobs.delete_file(tenant, file_id):
            raise _not_found("file", file_id)
        await self._p.files.delete(file_id)

    # -- batches -----------------------------------------------------------------------

    async def create_batch(
        self,
        tenant: str,
        *,
        input_file_id: str,
        endpoint: str,
        completion_window: str,
        metadata: Mapping[str, str] | None = None,
    ) -> BatchJob:
        info = await self._p.jobs.get_file(tenant, input_file_id)
        if info is None or info.purpose != "batch":
            raise _not_found("input file", input_file_id)
        if endpoint not in SUPPORTED_URLS:
            raise BatchRefused(400, "invalid_endpoint", f"endpoint must be one of {SUPPORTED_URLS}")
        if set(info.urls) != {endpoint}:
            message = f"the file's lines ask for {', '.join(info.urls)}, not {endpoint}"
            raise BatchRefused(400, "invalid_endpoint", message, param="endpoint")
        window = COMPLETION_WINDOWS.get(completion_window)
        if window is None:
            raise BatchRefused(400, "invalid_completion_window", "completion_window must be 24h")
        meta = dict(metadata or {})
        if len(meta) > MAX_METADATA or not all(
            isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 512
            for k, v in meta.items()
        ):
            raise BatchRefused(400, "invalid_metadata", "at most 16 string pairs (64 / 512)")
        now = int(self._p.clock.now())
        model = info.models[0] if len(info.models) == 1 else None
        job = BatchJob(
            id=f"batch_{secrets.token_hex(12)}",
            tenant=tenant,
            input_file_id=input_file_id,
            endpoint=endpoint,
            completion_window=completion_window,
            created_at=now,
            expires_at=now + window,
            queue=self._place(tenant, model or info.models[0]),
            metadata=meta,
            model=model,
        )
        job = dataclasses.replace(job, counts=RequestCounts(total=info.lines))
        await self._p.jobs.put_batch(job)
        await self._start(job)
        return job

    async def batch(self, tenant: str, batch_id: str) -> BatchJob:
        job = await self._p.jobs.get_batch(tenant, batch_id)
        if job is None:
            raise _not_found("batch", batch_id)
        return job

    async def batches(self, tenant: str, *, after: str | None, limit: int) -> Page:
        if not 1 <= limit <= 100:
            raise BatchRefused(400, "invalid_limit", "limit must be 1 to 100", param="limit")
        return await self._p.jobs.list_batches(tenant, after=after, limit=limit)

    async def cancel(self, tenant: str, batch_id: str) -> BatchJob:
        job = await self.batch(tenant, batch_id)
        if job.terminal:
            return job  # cancelling a finished batch changes nothing (OpenAI answers it too)
        asked = await self._p.jobs.request_cancel(tenant, batch_id, int(self._p.clock.now()))
        if asked is None:
            raise _not_found("batch", batch_id)
        running = self._runners.get(batch_id)
        if running is not None:
            running[0].poke()
        return asked

    # -- runners -----------------------------------------------------------------------

    async def start(self) -> None:
        """Resume every unfinished batch this replica can lease; keep looking for more."""
        await self.rescan()
        self._rescan = asyncio.create_task(self._rescan_forever(), name="batch-rescan")

    async def rescan(self) -> None:
        for job in await self._p.jobs.active_batches():
            await self._start(job)

    async def _rescan_forever(self) -> None:
        while True:
            await asyncio.sleep(RESCAN_SECONDS)
            try:
                await self.rescan()
            except Exception as exc:  # a broker blip: next time
                log.warning("batch rescan failed: %s", exc)

    async def _start(self, job: BatchJob) -> None:
        clock = self._p.clock
        now = clock.now()
        until = now + LEASE_SECONDS * clock.scale
        held = await self._p.jobs.take_lease(job.id, self._owner, until=until, now=now)
        if not held or job.id in self._runners:
            return
        runner = BatchRunner(job, self._p)
        task = asyncio.create_task(self._run(runner), name=f"batch-{job.id}")
        self._runners[job.id] = (runner, task)

    async def _run(self, runner: BatchRunner) -> BatchJob:
        try:
            return await runner.run()
        except Exception:
            log.exception("batch %s stopped; it resumes at the next rescan", runner.job.id)
            raise
        finally:
            self._runners.pop(runner.job.id, None)
            self._p.metrics.stopped(runner.job.status)

    async def aclose(self) -> None:
        """Stop the runners and the rescan, and hand the leases back: the batches resume at
        once in the next coordinator (a crashed one's leases lapse instead)."""
        running = dict(self._runners)
        tasks: list[asyncio.Task[Any]] = [t for _, t in running.values()]
        if self._rescan is not None:
            tasks.append(self._rescan)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._runners.clear()
        now = self._p.clock.now()
        for batch_id in running:
            with contextlib.suppress(Exception):
                await self._p.jobs.take_lease(batch_id, self._owner, until=now, now=now)

    @property
    def metrics(self) -> BatchMetrics:
        return self._p.metrics

    @property
    def running(self) -> int:
        return len(self._runners)


async def _checked(body: AsyncIterator[bytes], checker: LineValidator) -> AsyncIterator[bytes]:
    """``body`` passed through, each complete line checked on the way."""
    rest = b""
    async for chunk in body:
        rest += chunk
        *whole, rest = rest.split(b"\n")
        for line in whole:
            checker.feed(line)
        yield chunk
    if rest:
        checker.feed(rest)
    checker.finish()


async def _limited(chunks: AsyncIterator[bytes], size: int) -> AsyncIterator[bytes]:
    left = size
    async for chunk in chunks:
        if left <= 0:
            break
        yield chunk[:left]
        left -= len(chunk)
