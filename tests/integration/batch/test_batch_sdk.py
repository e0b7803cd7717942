"""The official openai SDK end to end: files, batches, polling, output files, cancel."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import openai
import pytest
from batch_rig import input_lines, read_lines, running_batch_front

TERMINAL = {"completed", "failed", "expired", "cancelled"}


def client(url: str, tenant: str = "premium") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{url}/v1",
        api_key="-",
        max_retries=0,
        default_headers={"x-llm-d-tenant": tenant},
    )


async def until_terminal(api: openai.AsyncOpenAI, batch_id: str, *, within: float) -> object:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        batch = await api.batches.retrieve(batch_id)
        if batch.status in TERMINAL:
            return batch
        await asyncio.sleep(0.2)
    raise AssertionError(f"batch {batch_id} not finished within {within} s")


@pytest.mark.serial
async def test_a_thousand_lines_complete_each_custom_id_once_in_openai_shape(
    tmp_path: Path,
) -> None:
    async with running_batch_front(tmp_path) as front, client(front.url) as api:
        uploaded = await api.files.create(file=("input.jsonl", input_lines(1000)), purpose="batch")
        assert uploaded.purpose == "batch" and uploaded.bytes > 0
        batch = await api.batches.create(
            input_file_id=uploaded.id,
            endpoint="/v1/completions",
            completion_window="24h",
            metadata={"team": "premium"},
        )
        assert batch.status in ("validating", "in_progress")
        done = await until_terminal(api, batch.id, within=90)
        assert done.status == "completed"  # type: ignore[attr-defined]
        counts = done.request_counts  # type: ignore[attr-defined]
        assert (counts.total, counts.completed, counts.failed) == (1000, 1000, 0)
        assert done.error_file_id is None  # type: ignore[attr-defined]
        output = await api.files.content(done.output_file_id)  # type: ignore[attr-defined]
        lines = read_lines(output.content)
        assert sorted(line["custom_id"] for line in lines) == sorted(
            f"req-{i}" for i in range(1000)
        )
        first = lines[0]
        assert set(first) == {"id", "custom_id", "response", "error"}
        assert first["error"] is None
        assert first["response"]["status_code"] == 200
        assert first["response"]["body"]["usage"]["completion_tokens"] == 4
        assert done.completed_at >= done.in_progress_at  # type: ignore[attr-defined]
        async with aiohttp.ClientSession() as http, http.get(f"{front.url}/metrics") as reply:
            scraped = await reply.text()
        assert 'sluiceway_coordinator_batch_lines_total{outcome="completed"} 1000.0' in scraped
        assert 'sluiceway_coordinator_batches_finished_total{status="completed"} 1.0' in scraped


def custom_ids(*files: bytes) -> list[str]:
    return sorted(line["custom_id"] for data in files for line in read_lines(data))


@pytest.mark.serial
async def test_a_cancel_mid_way_stops_queued_lines_and_lets_running_ones_finish(
    tmp_path: Path,
) -> None:
    async with running_batch_front(tmp_path, workers=2) as front, client(front.url) as api:
        uploaded = await api.files.create(
            file=("input.jsonl", input_lines(1000, max_tokens=16)), purpose="batch"
        )
        batch = await api.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/completions", completion_window="24h"
        )
        deadline = time.monotonic() + 60
        while (await api.batches.retrieve(batch.id)).request_counts.completed < 20:  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        asked = await api.batches.cancel(batch.id)
        assert asked.status in ("cancelling", "cancelled")
        done = await until_terminal(api, batch.id, within=60)
        assert done.status == "cancelled"  # type: ignore[attr-defined]
        counts = done.request_counts  # type: ignore[attr-defined]
        assert counts.completed >= 20 and counts.completed + counts.failed == 1000
        assert counts.failed > 500  # most lines never ran
        output = (await api.files.content(done.output_file_id)).content  # type: ignore[attr-defined]
        errors = (await api.files.content(done.error_file_id)).content  # type: ignore[attr-defined]
        assert custom_ids(output, errors) == sorted(f"req-{i}" for i in range(1000))
        codes = {line["error"]["code"] for line in read_lines(errors)}
        assert codes == {"batch_cancelled"}
        assert len(read_lines(output)) == counts.completed


async def test_tenants_see_only_their_own_files_and_batches(tmp_path: Path) -> None:
    keys = {"key-a": "premium", "key-b": "standard"}
    async with running_batch_front(tmp_path, api_keys=keys) as front:
        a = openai.AsyncOpenAI(base_url=f"{front.url}/v1", api_key="key-a", max_retries=0)
        b = openai.AsyncOpenAI(base_url=f"{front.url}/v1", api_key="key-b", max_retries=0)
        async with a, b:
            uploaded = await a.files.create(file=("in.jsonl", input_lines(3)), purpose="batch")
            batch = await a.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/completions", completion_window="24h"
            )
            for call in (
                b.files.retrieve(uploaded.id),
                b.files.content(uploaded.id),
                b.files.delete(uploaded.id),
                b.batches.retrieve(batch.id),
                b.batches.cancel(batch.id),
                b.batches.create(
                    input_file_id=uploaded.id,
                    endpoint="/v1/completions",
                    completion_window="24h",
                ),
            ):
                with pytest.raises(openai.NotFoundError):
                    await call
            assert [f.id async for f in b.files.list()] == []
            assert [x.id async for x in b.batches.list()] == []
            assert [f.id async for f in a.files.list()] == [uploaded.id]
            nobody = openai.AsyncOpenAI(base_url=f"{front.url}/v1", api_key="no", max_retries=0)
            async with nobody:
                with pytest.raises(openai.AuthenticationError):
                    await nobody.files.list()
            done = await until_terminal(a, batch.id, within=60)
            assert done.status == "completed"  # type: ignore[attr-defined]


async def test_a_bad_line_is_named_and_pages_follow_openais_cursor(tmp_path: Path) -> None:
    async with (
        running_batch_front(tmp_path, start_processor=False) as front,
        client(front.url) as api,
    ):
        bad = input_lines(1) + b'{"custom_id": "x", "method": "POST", "url": "/v1/completions"}\n'
        with pytest.raises(openai.BadRequestError) as err:
            await api.files.create(file=("in.jsonl", bad), purpose="batch")
        assert "line 2: body must be a JSON object" in str(err.value)
        zero_tokens = input_lines(1).replace(b'"max_tokens": 4', b'"max_tokens": 0')
        with pytest.raises(openai.BadRequestError, match=r"line 1: .*max_tokens"):
            await api.files.create(file=("in.jsonl", zero_tokens), purpose="batch")
        uploaded = await api.files.create(file=("in.jsonl", input_lines(2)), purpose="batch")
        made = [
            await api.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/completions", completion_window="24h"
            )
            for _ in range(3)
        ]
        page = await api.batches.list(limit=2)
        assert page.has_more and len(page.data) == 2
        every = [x.id async for x in api.batches.list(limit=2)]
        assert sorted(every) == sorted(b.id for b in made)
        with pytest.raises(openai.BadRequestError, match="24h"):
            await api.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/completions", completion_window="1h"
            )
        with pytest.raises(openai.ConflictError, match="running batch"):
            await api.files.delete(uploaded.id)  # its batches still read it
        spare = await api.files.create(file=("in.jsonl", input_lines(1)), purpose="batch")
        deleted = await api.files.delete(spare.id)
        assert deleted.deleted and deleted.id == spare.id
