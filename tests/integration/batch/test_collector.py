"""Result lines are written once: a repeat, a duplicate answer or a crash between the file
write and the commit neither loses nor doubles a line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from jobstore_conformance import job

from sluiceway.batch.collector import (
    Collector,
    error_file_name,
    line_number,
    output_file_name,
    register_outputs,
)
from sluiceway.batch.local_files import LocalFileStore
from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.output import expired_line
from sluiceway.wire import ErrorCode, ResultRecord

IDS = {1: "c1", 2: "c2", 3: "c3"}


def record(number: int, status: int = 200) -> str:
    return ResultRecord.ok(f"a:batch_d-{number}", status, '{"ok":1}').encode()


async def test_records_land_once_even_when_collected_twice(tmp_path: Path) -> None:
    jobs, files = MemoryJobStore(), LocalFileStore(tmp_path)
    collector = Collector(jobs, files, IDS)
    start = job("batch_d")
    lines = collector.result_lines(start, [record(1), record(2, 500), record(1), "garbage"])
    assert [n for n, _ in lines] == [1, 2, 1]
    once = await collector.write(start, lines)
    twice = await collector.write(once, lines)
    assert twice == once
    assert (once.counts.completed, once.counts.failed) == (1, 1)
    assert (tmp_path / output_file_name("batch_d")).read_bytes().count(b"\n") == 1
    assert (tmp_path / error_file_name("batch_d")).stat().st_size == once.error_bytes


async def test_a_crash_before_the_commit_is_overwritten(tmp_path: Path) -> None:
    jobs, files = MemoryJobStore(), LocalFileStore(tmp_path)
    collector = Collector(jobs, files, IDS)
    committed = await collector.write(
        job("batch_d"), collector.result_lines(job("batch_d"), [record(1)])
    )
    # a crash: line 2 appended, never committed
    await files.append(output_file_name("batch_d"), b"half a line", at=committed.output_bytes)
    restarted = Collector(jobs, files, IDS)
    stored = await jobs.get_batch("a", "batch_d")
    assert stored == committed
    final = await restarted.write(stored, restarted.result_lines(stored, [record(2)]))
    text = (tmp_path / output_file_name("batch_d")).read_bytes()
    assert b"half" not in text and text.count(b"\n") == 2 == final.counts.completed


async def test_closing_out_skips_done_lines_and_registers_the_files(tmp_path: Path) -> None:
    jobs, files = MemoryJobStore(), LocalFileStore(tmp_path)
    collector = Collector(jobs, files, IDS)
    done = await collector.write(
        job("batch_d"), collector.result_lines(job("batch_d"), [record(2)])
    )
    closed = await collector.close_out(done, [1, 2, 3], expired_line, chunk=2)
    assert (closed.counts.completed, closed.counts.failed) == (1, 2)
    named = await register_outputs(closed, jobs, 50)
    assert named.output_file_id == output_file_name("batch_d")
    assert named.error_file_id == error_file_name("batch_d")
    info = await jobs.get_file("a", error_file_name("batch_d"))
    assert info is not None and info.purpose == "batch_output" and info.bytes == closed.error_bytes
    empty = await register_outputs(dataclasses.replace(job("batch_e")), jobs, 50)
    assert (empty.output_file_id, empty.error_file_id) == (None, None)
    assert line_number("t:batch_d-12") == 12 and line_number("t:x") is None
    assert ErrorCode.CANCELLED  # the withdrawn lines' code, see test_withdraw
