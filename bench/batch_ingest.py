"""Batch API ingest: a 50,000-line batch into one coordinator, beside the same requests
enqueued directly, and the coordinator's memory while it ingests.

A ``sluiceway coordinator`` (its own process, on a private Redis, no processor: only the
ingest is measured) receives the upload (each line checked as it streams to disk), then a
batch over it; its runner queues the lines in chunks. Figures: upload MB/s and lines/s, ingest
lines/s (batch created to every line queued, read from the job in Redis), the same lines
enqueued directly through the ``Producer`` in chunks of the same size (the baseline), and the
coordinator's peak RSS over upload and ingest (target <= 200 MB). Lines ask for
``max_tokens`` 16; the coordinator runs at time scale 10.

``python -m bench batch_ingest [--lines N]`` (default 50,000).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import openai
import redis.asyncio as aioredis
import yaml

from bench.coordinator_wait import coordinator_process, rss_mib
from sluiceway.batch.runner import CHUNK
from sluiceway.broker import open_broker
from sluiceway.broker.base import BrokerOptions
from sluiceway.clock import RealClock
from sluiceway.localservices import private_redis
from sluiceway.processor.producer import Producer, request

GUIDE = Path(__file__).parent.parent / "tests/fixtures/guide/coordinator-config.yaml"
SCALE = 10.0


def _lines(n: int) -> bytes:
    body = {"model": "sim-model", "max_tokens": 16}
    return b"".join(
        json.dumps(
            {
                "custom_id": f"req-{i}",
                "method": "POST",
                "url": "/v1/completions",
                "body": {**body, "prompt": f"Summarise item {i} of the catalogue in one line."},
            }
        ).encode()
        + b"\n"
        for i in range(n)
    )


def _config(tmp: Path, redis_url: str) -> Path:
    doc = yaml.safe_load(GUIDE.read_text())
    doc["gateway"]["address"] = "http://127.0.0.1:9"  # no passthrough here
    params = doc["pipeline"]["steps"][0]["params"]
    params.update({"redis_url": redis_url, "batch": {"files_url": str(tmp / "files")}})
    path = tmp / "coordinator.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


async def _sample_rss(pid: int, peak: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], rss_mib(pid))
        await asyncio.sleep(0.1)


async def _until_ingested(raw: aioredis.Redis, batch_id: str, n: int) -> None:
    """Every line queued, read from the job in Redis (nothing announces a count)."""
    while True:
        doc = await raw.get(f"batch:job:{batch_id}")
        if doc is not None and int(json.loads(doc)["ingested"]) >= n:
            return
        await asyncio.sleep(0.05)


async def _direct(url: str, n: int) -> float:
    """Lines per second enqueued straight through the producer, in chunks of ``CHUNK``."""
    clock = RealClock(scale=SCALE)
    broker = await open_broker("redis-sortedset", BrokerOptions(url=url, time_scale=SCALE))
    producer = Producer(broker, clock=clock)
    payload = {"model": "sim-model", "max_tokens": 16, "prompt": "x" * 48}
    start = time.perf_counter()
    try:
        for first in range(0, n, CHUNK):
            now = clock.now()
            batch = [
                request(f"direct:{i}", payload, deadline=now + 86400, endpoint="/v1/completions")
                for i in range(first, min(n, first + CHUNK))
            ]
            await producer.submit_many(batch, queue="direct", result_queue="results:direct")
    finally:
        await broker.aclose()
    return n / (time.perf_counter() - start)


async def _run(n: int) -> int:
    data = _lines(n)
    with tempfile.TemporaryDirectory() as folder, private_redis() as server:
        tmp = Path(folder)
        raw = aioredis.Redis.from_url(server.url)
        scaled = ("--time-scale", str(SCALE))
        config = _config(tmp, server.url)
        async with coordinator_process(config, *scaled, pin=False) as (url, pid):
            peak, stop = [0.0], asyncio.Event()
            sampler = asyncio.create_task(_sample_rss(pid, peak, stop))
            idle = rss_mib(pid)
            headers = {"x-llm-d-tenant": "premium"}
            async with openai.AsyncOpenAI(
                base_url=f"{url}/v1", api_key="-", default_headers=headers, timeout=600
            ) as api:
                start = time.perf_counter()
                uploaded = await api.files.create(file=("in.jsonl", data), purpose="batch")
                upload_s = time.perf_counter() - start
                start = time.perf_counter()
                batch = await api.batches.create(
                    input_file_id=uploaded.id, endpoint="/v1/completions", completion_window="24h"
                )
                await _until_ingested(raw, batch.id, n)
                ingest_s = time.perf_counter() - start
            stop.set()
            await sampler
        await raw.aclose()
        direct = await _direct(server.url, n)
    mb = len(data) / 1e6
    print(f"lines {n:,}, input file {mb:.1f} MB, time scale {SCALE:g}")
    print(f"upload (checked as it streams): {upload_s:.2f} s, {mb / upload_s:.1f} MB/s, "
          f"{n / upload_s:,.0f} lines/s")  # fmt: skip
    print(f"ingest (batch created to all queued): {ingest_s:.2f} s, {n / ingest_s:,.0f} lines/s")
    print(f"direct enqueue (producer, chunks of {CHUNK}): {direct:,.0f} lines/s "
          f"(ingest at {n / ingest_s / direct:.0%} of it)")  # fmt: skip
    print(f"coordinator RSS: idle {idle:.0f} MiB, peak during upload and ingest {peak[0]:.0f} MiB"
          " (target <= 200 MB)")  # fmt: skip
    return 0 if peak[0] * 1.048576 <= 200 else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench batch_ingest")
    parser.add_argument("--lines", type=int, default=50_000)
    args = parser.parse_args(argv)
    return asyncio.run(_run(args.lines))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
