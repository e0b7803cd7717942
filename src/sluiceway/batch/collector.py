"""Results into the output and error files, each line exactly once.

A pass reads (without taking) the oldest records of the batch's result list, skips those whose
line is already in the done set, appends the others' lines at the files' committed sizes,
commits the done lines with the new sizes and counts in one step, and only then removes the
records. A crash before the commit leaves bytes past the committed size: the next append
overwrites them. A crash after it leaves records whose lines are done: the next pass drops
them. So a coordinator restart or a duplicate answer never loses nor doubles a line.

Closing out (a cancel's lines never queued, the window's end) writes lines that got no
result the same way, in chunks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from sluiceway.batch.base import FileInfo, FileStore, JobStore
from sluiceway.batch.metrics import BatchMetrics
from sluiceway.batch.output import OutputLine, line_for_result, line_id
from sluiceway.batch.status import BatchJob
from sluiceway.errors import WireError
from sluiceway.wire import ResultRecord, decode_result

__all__ = [
    "PASS_SIZE",
    "Collector",
    "error_file_name",
    "line_number",
    "output_file_name",
    "register_outputs",
    "request_id",
]

PASS_SIZE: Final = 256
# (line id, custom id) -> the line to write for a request that got no result.
Closing = Callable[[str, str], OutputLine]


def request_id(batch_id: str, number: int) -> str:
    """The queued request of line ``number`` goes by ``<batch id>-<number>``."""
    return f"{batch_id}-{number}"


def line_number(record_id: str) -> int | None:
    """The line number in a result's id (``<tenant>:<batch id>-<number>``)."""
    tail = record_id.rpartition("-")[2]
    return int(tail) if tail.isdigit() else None


def output_file_name(batch_id: str) -> str:
    return f"file-out-{batch_id.removeprefix('batch_')}"


def error_file_name(batch_id: str) -> str:
    return f"file-err-{batch_id.removeprefix('batch_')}"


class Collector:
    """Writes one batch's lines; ``custom_ids`` maps line numbers to custom ids."""

    def __init__(
        self,
        jobs: JobStore,
        files: FileStore,
        custom_ids: Mapping[int, str],
        metrics: BatchMetrics | None = None,
    ) -> None:
        self._jobs = jobs
        self._files = files
        self._ids = custom_ids
        self._metrics = metrics

    async def write(self, job: BatchJob, lines: Sequence[tuple[int, OutputLine]]) -> BatchJob:
        """Append ``lines`` (number, line) not yet done and commit them; the saved job."""
        done = await self._jobs.done_lines(job.id, [n for n, _ in lines])
        out, err, counts, numbers, outcomes = bytearray(), bytearray(), job.counts, [], []
        for number, line in lines:
            if number in done or number in numbers:
                continue
            numbers.append(number)
            outcomes.append(line.counted_as)
            (out if line.ok else err).extend(line.text)
            counts = counts.counted(ok=line.ok)
        if not numbers:
            return job
        out_size, err_size = job.output_bytes, job.error_bytes
        if out:
            out_size = await self._files.append(output_file_name(job.id), bytes(out), at=out_size)
        if err:
            err_size = await self._files.append(error_file_name(job.id), bytes(err), at=err_size)
        job = dataclasses.replace(job, counts=counts, output_bytes=out_size, error_bytes=err_size)
        await self._jobs.commit_lines(job, numbers)
        if self._metrics is not None:
            self._metrics.written(outcomes)
        return job

    def result_lines(self, job: BatchJob, records: Sequence[str]) -> list[tuple[int, OutputLine]]:
        """The lines for stored result records (unreadable or foreign records: none)."""
        lines = []
        for raw in records:
            try:
                record: ResultRecord = decode_result(raw)
            except WireError:
                continue
            number = line_number(record.id)
            custom_id = None if number is None else self._ids.get(number)
            if number is None or custom_id is None:
                continue
            rid = request_id(job.id, number)
            lines.append((number, line_for_result(line_id(job.id, number), custom_id, rid, record)))
        return lines

    async def close_out(
        self, job: BatchJob, numbers: Sequence[int], closing: Closing, *, chunk: int = 500
    ) -> BatchJob:
        """Write ``closing``'s line for each of ``numbers`` not yet done."""
        for start in range(0, len(numbers), chunk):
            part = numbers[start : start + chunk]
            lines = [(n, closing(line_id(job.id, n), self._ids[n])) for n in part]
            job = await self.write(job, lines)
        return job


async def register_outputs(job: BatchJob, jobs: JobStore, now: int) -> BatchJob:
    """List the batch's output and error files (those with a line) as the tenant's files
    (purpose ``batch_output``) and name them in the job."""
    named: list[str | None] = []
    for kind, name, size in (
        ("output", output_file_name(job.id), job.output_bytes),
        ("error", error_file_name(job.id), job.error_bytes),
    ):
        named.append(name if size > 0 else None)
        if size > 0:
            filename = f"{job.id}_{kind}.jsonl"
            await jobs.put_file(FileInfo(name, job.tenant, filename, "batch_output", size, now))
    return dataclasses.replace(job, output_file_id=named[0], error_file_id=named[1])
