"""One batch from ``validating`` to a final status, in the coordinator that holds its lease.

Each round: take a cancel request into account, end the batch at its window's end, queue the
next chunk of lines (``CHUNK`` at a time, one broker step each, so a 50,000-line batch neither
blocks the event loop nor sits in memory), then collect what has landed; when nothing is left
to queue and nothing landed, wait for the broker's wake-up (or a poke from this process).

Every line is a queued request of the batch's tenant: its route's batch-tier queue, the quota
attribute set to the tenant, the deadline at the window's end (a few ms earlier per group
of lines sharing a system prompt, so each group runs together: ``grouping.py``), its
result routed to the batch's own list ``results:req:<tenant>:<batch id>``. Progress
(``ingested``, the files' committed sizes, the counts) lives in the job, so a restarted
coordinator resumes where the last commit left off; lines queued after it are found by their
active markers and not queued twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final, cast

from sluiceway.batch.base import FileStore, JobStore, lines_of
from sluiceway.batch.collector import PASS_SIZE, Collector, register_outputs, request_id
from sluiceway.batch.grouping import PromptGroups, system_prompt
from sluiceway.batch.metrics import BatchMetrics
from sluiceway.batch.output import cancelled_line, expired_line
from sluiceway.batch.status import BatchJob, BatchStatus
from sluiceway.batch.withdraw import withdraw_queued
from sluiceway.broker.base import Broker
from sluiceway.broker.inspect import Inspectable
from sluiceway.broker.keys import mailbox
from sluiceway.clock import Clock
from sluiceway.processor.producer import Producer, request
from sluiceway.wire import ErrorCode

__all__ = ["CHUNK", "BatchRunner", "RunnerParts", "result_list"]

log = logging.getLogger(__name__)
CHUNK: Final = 500
RESULT_TTL_SECONDS: Final = 24 * 3600.0  # scaled: a withdrawn line's record in the list


def result_list(tenant: str, batch_id: str) -> str:
    """The batch's result list: the tenant's mailbox family (``results:req:<tenant>:``), named
    by the batch id, which no request id can be (``_`` is not allowed in those), so the grants
    and the one wake-up subscription per tenant that cover mailboxes cover it too."""
    return mailbox(tenant, batch_id)


@dataclass(frozen=True)
class RunnerParts:
    """What every runner shares: the broker, the stores, the clock and how to wait."""

    broker: Broker
    jobs: JobStore
    files: FileStore
    clock: Clock
    quota_attribute: str
    notify: bool  # the broker wakes result waiters (else look every ``poll`` wall seconds)
    poll: float = 0.2
    metrics: BatchMetrics = field(default_factory=BatchMetrics)
    group_prompts: bool = True  # lines sharing a system prompt run together (grouping.py)


async def _request_lines(files: FileStore, file_id: str) -> AsyncIterator[tuple[int, bytes]]:
    """(line number, line) of each non-blank line of an input file."""
    number = 0
    async for raw in lines_of(files.read(file_id)):
        number += 1
        if raw.strip():
            yield number, raw


class BatchRunner:
    """Runs one batch; :meth:`poke` wakes it (a cancel asked in this process)."""

    def __init__(self, job: BatchJob, parts: RunnerParts) -> None:
        self.job = job
        self._p = parts
        self._poked = asyncio.Event()
        self._dest = result_list(job.tenant, job.id)
        self._prefix = f"{job.tenant}:{job.id}-"
        self._ids: dict[int, str] = {}
        self._groups = PromptGroups()
        self._collector = Collector(parts.jobs, parts.files, self._ids, parts.metrics)
        self._producer = Producer(parts.broker, clock=parts.clock)

    def poke(self) -> None:
        self._poked.set()

    def _now(self) -> int:
        return int(self._p.clock.now())

    async def _save(self, job: BatchJob) -> BatchJob:
        await self._p.jobs.put_batch(job)
        self.job = job
        return job

    async def _move(self, to: BatchStatus) -> BatchJob:
        before, now = self.job.status, self._now()
        job = await self._save(self.job.moved(to, now))
        self._p.metrics.moved(before, to, age=float(now - job.created_at))
        return job

    async def run(self) -> BatchJob:
        """Run to a final status (returns the final job)."""
        self._p.metrics.moved(None, self.job.status, age=0.0)
        resumed = self.job.status is not BatchStatus.VALIDATING  # lines may be queued already
        try:
            await self._read_custom_ids()
        except Exception as exc:  # the input file is gone or unreadable
            if resumed:
                raise  # only validation may fail a batch; the rescan tries again
            return await self._fail("input_file_unreadable", f"{type(exc).__name__}: {exc}")
        if not resumed:
            await self._move(BatchStatus.IN_PROGRESS)
        lines = _request_lines(self._p.files, self.job.input_file_id)
        queued_all = stopped = False
        while not self.job.terminal:
            await self._refresh()
            if self._p.clock.now() >= self.job.expires_at:
                return await self._expire()
            if self.job.status is BatchStatus.CANCELLING and not stopped:
                await self._stop_queueing()
                queued_all = stopped = True
            if not queued_all:
                queued_all = not await self._ingest(lines, check=resumed)
                resumed = False
            landed = await self._collect()
            if self.job.counts.finished >= self.job.counts.total:
                return await self._finish()
            if queued_all and not landed:
                await self._wait()
        return self.job

    async def _read_custom_ids(self) -> None:
        """The custom id of each line, and (grouping on) its system prompt's group."""
        count = 0
        async for number, raw in _request_lines(self._p.files, self.job.input_file_id):
            line = json.loads(raw)
            self._ids[number] = line["custom_id"]
            if self._p.group_prompts:
                self._groups.add(system_prompt(line["body"]))
            count += 1
            if count % 1000 == 0:
                await asyncio.sleep(0)  # let the loop breathe on a big file

    async def _refresh(self) -> None:
        stored = await self._p.jobs.get_batch(self.job.tenant, self.job.id)
        asked = None if stored is None else stored.cancel_requested_at
        self.job = dataclasses.replace(self.job, cancel_requested_at=asked)
        if asked is not None and self.job.status is not BatchStatus.CANCELLING:
            await self._move(BatchStatus.CANCELLING)

    async def _stop_queueing(self) -> None:
        """A cancel: lines never queued are written ``batch_cancelled``, queued ones are
        withdrawn (their records say CANCELLED), running ones finish."""
        numbers = sorted(n for n in self._ids if n > self.job.ingested)
        self.job = await self._collector.close_out(self.job, numbers, cancelled_line)
        await self._withdraw(ErrorCode.CANCELLED)

    async def _ingest(self, lines: AsyncIterator[tuple[int, bytes]], *, check: bool) -> bool:
        """Queue the next chunk; False when every line is queued. ``check``: the first chunk
        after a restart, whose lines may already be queued."""
        chunk: list[tuple[int, bytes]] = []
        async for number, raw in lines:
            if number > self.job.ingested:
                chunk.append((number, raw))
            if len(chunk) >= CHUNK:
                break
        if not chunk:
            return False
        last = max(n for n, _ in chunk)
        if check:
            chunk = await self._not_yet_queued(chunk)
        now = self._p.clock.now()
        job = self.job
        requests = [
            request(
                f"{job.tenant}:{request_id(job.id, n)}",
                line["body"],
                deadline=job.expires_at - self._shift(line["body"]),
                metadata={self._p.quota_attribute: job.tenant},
                endpoint=line["url"],
                created=now,
            )
            for n, raw in chunk
            for line in [json.loads(raw)]
        ]
        if requests:
            await self._producer.submit_many(requests, queue=job.queue, result_queue=self._dest)
        await self._save(dataclasses.replace(self.job, ingested=max(last, self.job.ingested)))
        return True

    def _shift(self, body: dict[str, object]) -> float:
        return self._groups.shift(system_prompt(body)) if self._p.group_prompts else 0.0

    async def _not_yet_queued(self, chunk: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        done = await self._p.jobs.done_lines(self.job.id, [n for n, _ in chunk])
        left = []
        for n, raw in chunk:
            envelope = f"{self.job.tenant}:{request_id(self.job.id, n)}"
            if n not in done and not await self._p.broker.is_pending(envelope):
                left.append((n, raw))
        return left

    async def _collect(self) -> int:
        """One pass over the result list; how many records it took."""
        lists = cast(Inspectable, self._p.broker)
        records = await lists.peek_results(self._dest, PASS_SIZE)
        if not records:
            return 0
        lines = self._collector.result_lines(self.job, records)
        self.job = await self._collector.write(self.job, lines)
        for raw in records:
            await lists.remove_result(self._dest, raw)
        return len(records)

    async def _withdraw(self, code: ErrorCode) -> int:
        return await withdraw_queued(
            self._p.broker,
            self.job.queue,
            id_prefix=self._prefix,
            destination=self._dest,
            code=code,
            now=self._p.clock.now(),
            result_ttl=self._p.clock.to_wall(RESULT_TTL_SECONDS),
        )

    async def _wait(self) -> None:
        block = min(self._p.clock.to_wall(max(0.0, self.job.expires_at - self._p.clock.now())), 1.0)
        if not self._p.notify:
            block = min(block, self._p.poll)
        poked = asyncio.ensure_future(self._poked.wait())
        landed = asyncio.ensure_future(self._p.broker.wait_for_result(self._dest, block))
        try:
            await asyncio.wait({poked, landed}, timeout=block + 0.05, return_when="FIRST_COMPLETED")
        finally:
            for task in (poked, landed):
                task.cancel()
            await asyncio.gather(poked, landed, return_exceptions=True)
        self._poked.clear()

    async def _finish(self) -> BatchJob:
        if self.job.status is BatchStatus.CANCELLING:
            return await self._final(BatchStatus.CANCELLED)
        await self._move(BatchStatus.FINALIZING)
        return await self._final(BatchStatus.COMPLETED)

    async def _expire(self) -> BatchJob:
        """The window is over: queued lines withdrawn, what finished written, the rest
        ``batch_expired`` (``batch_cancelled`` for a batch being cancelled)."""
        await self._withdraw(ErrorCode.DEADLINE_EXCEEDED)
        await self._collect()
        cancelling = self.job.status is BatchStatus.CANCELLING
        closing = cancelled_line if cancelling else expired_line
        job = await self._collector.close_out(self.job, sorted(self._ids), closing)
        self.job = job
        with contextlib.suppress(Exception):
            await self._p.broker.expire_result(self._dest, 0)
        return await self._final(BatchStatus.CANCELLED if cancelling else BatchStatus.EXPIRED)

    async def _fail(self, code: str, message: str) -> BatchJob:
        """Validation failed: ``failed``, with the error in ``errors``."""
        now = self._now()
        error = {"code": code, "message": message, "param": "input_file_id", "line": None}
        job = await self._save(self.job.failed_with([error], now))
        self._p.metrics.moved(BatchStatus.VALIDATING, job.status, age=float(now - job.created_at))
        return job

    async def _final(self, status: BatchStatus) -> BatchJob:
        """Register the output and error files and move to ``status``."""
        self.job = await register_outputs(self.job, self._p.jobs, self._now())
        return await self._move(status)
