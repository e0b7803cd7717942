"""A coordinator restarted mid-batch on SQLite, Redis and PostgreSQL: the new one resumes the
batch from the stores and every line lands exactly once in the output file."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
from batch_rig import guide_params, input_lines, read_lines, running_batch_front

from sluiceway.batch.base import JobStore
from sluiceway.batch.local_files import LocalFileStore
from sluiceway.batch.stores import BatchStores, open_batch_stores
from sluiceway.broker import open_broker
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.coordinator.batches import batch_service
from sluiceway.gates.quota_store import QuotaStore
from sluiceway.localservices import RedisServer

LINES = 200


@contextlib.asynccontextmanager
async def backend(
    transport: str, url: str, tmp_path: Path
) -> AsyncIterator[tuple[Broker, JobStore, QuotaStore]]:
    options = BrokerOptions(url=url)
    broker = await open_broker(transport, options)
    quota = await open_quota_stores(transport, broker, options)
    stores = await open_batch_stores(transport, broker, options, files_url=str(tmp_path / "f"))
    assert stores is not None
    try:
        yield broker, stores.jobs, quota("")
    finally:
        await stores.jobs.aclose()
        await quota.aclose()
        await broker.aclose()


async def restart_mid_batch(broker: Broker, jobs: JobStore, quota: QuotaStore, files: Path) -> None:
    async with running_batch_front(
        files, broker=broker, jobs=jobs, quota_store=quota, workers=2
    ) as front:
        api = openai.AsyncOpenAI(
            base_url=f"{front.url}/v1",
            api_key="-",
            max_retries=0,
            default_headers={"x-llm-d-tenant": "premium"},
        )
        async with api:
            uploaded = await api.files.create(
                file=("in.jsonl", input_lines(LINES, max_tokens=48)), purpose="batch"
            )
            batch = await api.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/completions", completion_window="24h"
            )
            deadline = time.monotonic() + 60
            while (await front.batches.batch("premium", batch.id)).counts.completed < 30:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            await front.batches.aclose()  # the coordinator stops; the processor runs on
            stopped = await front.batches.batch("premium", batch.id)
            assert stopped.counts.finished < LINES
            again = batch_service(
                guide_params(),
                broker,
                BatchStores(jobs, LocalFileStore(files)),
                clock=front.clock,
                notify=False,
            )
            await again.start()
            try:
                deadline = time.monotonic() + 90
                while (done := await again.batch("premium", batch.id)).status.value != "completed":
                    assert time.monotonic() < deadline, done.counts
                    await asyncio.sleep(0.1)
            finally:
                await again.aclose()
            assert done.output_file_id is not None
            output = (await api.files.content(done.output_file_id)).content
            ids = [line["custom_id"] for line in read_lines(output)]
            assert sorted(ids) == sorted(f"req-{i}" for i in range(LINES))
            assert done.counts.completed == LINES


@pytest.mark.serial
async def test_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/broker.sqlite"
    async with backend("sqlite", url, tmp_path) as (broker, jobs, quota):
        await restart_mid_batch(broker, jobs, quota, tmp_path / "files")


@pytest.mark.serial
@pytest.mark.redis
async def test_on_redis(redis_server: RedisServer, tmp_path: Path) -> None:
    async with backend("redis-sortedset", redis_server.url, tmp_path) as (broker, jobs, quota):
        await restart_mid_batch(broker, jobs, quota, tmp_path / "files")


@pytest.mark.serial
async def test_on_postgres(postgres_dsn: str, tmp_path: Path) -> None:
    async with backend("postgres", postgres_dsn, tmp_path) as (broker, jobs, quota):
        await restart_mid_batch(broker, jobs, quota, tmp_path / "files")
