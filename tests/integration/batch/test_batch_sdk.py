"""The official openai SDK end to end: files, batches, polling, output files, cancel."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

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
