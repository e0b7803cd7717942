"""A batch beside realtime traffic: k = 8 realtime streams' TTFT alone, then beside a batch.

The demo's whole stack in one process (the guide's 10-slot simulated pool; the router with
the isolation benchmark's ``best`` protection: the guide's bands with eviction and the adaptive
holdback, short async queues; the coordinator mounted in it serving the Batch API; the
processor with the guide's teams, 16 workers and the ``aimd`` pool gate), at time scale 10.
First k closed-loop realtime clients stream passthrough completions (tenant ``realtime``)
for a while: the baseline TTFT. Then a batch of the ``batch`` tenant's lines (``max_tokens``
16) is created and the same clients run again while it drains. Target: realtime TTFT p90
beside the batch <= 1.2 x the baseline's + 0.05 s (scaled seconds). Also reported: the batch
lines finished meanwhile, so the batch is seen to progress.

Everything shares one event loop, and a loop late by L ms moves every latency by L x the time
scale: the lag's p99 is printed beside the figures, and ``--time-scale`` runs it slower.

``python -m bench batch_isolation [--streams K] [--lines N] [--seconds S] [--time-scale X]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import openai

from sluiceway.batch.local_files import LocalFileStore
from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.stores import BatchStores
from sluiceway.bench.isolation.modes import mode_spec
from sluiceway.bench.isolation.sampler import LoopLag
from sluiceway.clock import RealClock
from sluiceway.demo.stack import StackSpec, running_demo_stack
from sluiceway.demo.traffic import Client

CAPACITY = 10  # the guide pool's slots


def _lines(n: int) -> bytes:
    return b"".join(
        json.dumps(
            {
                "custom_id": f"req-{i}",
                "method": "POST",
                "url": "/v1/completions",
                "body": {"model": "sim-model", "prompt": f"item {i}", "max_tokens": 16},
            }
        ).encode()
        + b"\n"
        for i in range(n)
    )


async def _realtime(client: Client, streams: int, seconds: float) -> list[float]:
    """TTFTs (scaled seconds) of ``streams`` closed-loop clients over ``seconds`` wall."""
    ttfts: list[float] = []
    end = time.monotonic() + seconds

    async def one() -> None:
        while time.monotonic() < end:
            answer = await client.live("realtime", max_tokens=16)
            if answer.status == 200:
                ttfts.append(answer.ttft)

    await asyncio.gather(*(one() for _ in range(streams)))
    return ttfts


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else float("nan")


async def _run(streams: int, lines: int, seconds: float, settle: float, scale: float) -> int:
    clock = RealClock(scale=scale)
    lag = LoopLag()
    watcher = asyncio.create_task(lag.run())
    with tempfile.TemporaryDirectory() as folder:
        stores = BatchStores(MemoryJobStore(), LocalFileStore(Path(folder)))
        best = mode_spec("best", CAPACITY)
        spec = StackSpec(router=best.router, pool_gate=lambda url: best.pool_gate)
        async with running_demo_stack(spec, clock=clock, batch_stores=stores) as stack:
            await stack.start_processor()
            client = Client(stack.url, clock)
            try:
                base = await _realtime(client, streams, seconds)
                base_lag = lag.p99()
                mark = lag.mark()
                headers = {"x-llm-d-tenant": "batch"}
                async with openai.AsyncOpenAI(
                    base_url=stack.base, api_key="-", default_headers=headers
                ) as api:
                    uploaded = await api.files.create(
                        file=("in.jsonl", _lines(lines)), purpose="batch"
                    )
                    batch = await api.batches.create(
                        input_file_id=uploaded.id,
                        endpoint="/v1/completions",
                        completion_window="24h",
                    )
                    if settle > 0:
                        await asyncio.sleep(settle)
                    mark = lag.mark()
                    beside = await _realtime(client, streams, seconds)
                    beside_lag = lag.p99(mark)
                    counts = (await api.batches.retrieve(batch.id)).request_counts
                    await api.batches.cancel(batch.id)
            finally:
                await client.aclose()
                watcher.cancel()
    base_p90, beside_p90 = _p90(base), _p90(beside)
    bound = 1.2 * base_p90 + 0.05
    finished = 0 if counts is None else counts.completed + counts.failed
    print(f"k = {streams} realtime streams, {seconds:g} wall s each run, time scale {scale:g}")
    print(f"event-loop lag p99: {base_lag or 0:.1f} ms alone, {beside_lag or 0:.1f} ms beside the "
          f"batch (x {scale:g} in scaled time)")  # fmt: skip
    print(f"realtime TTFT p90 alone: {base_p90:.3f} s ({len(base)} requests), "
          f"p50 {statistics.median(base):.3f} s")  # fmt: skip
    print(f"realtime TTFT p90 beside the batch: {beside_p90:.3f} s ({len(beside)} requests), "
          f"p50 {statistics.median(beside):.3f} s; bound {bound:.3f} s "
          f"({'met' if beside_p90 <= bound else 'MISSED'})")  # fmt: skip
    print(f"batch lines finished meanwhile: {finished} of {lines}")
    return 0 if beside_p90 <= bound else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench batch_isolation")
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--settle", type=float, default=0.0, help="wall s after creating")
    parser.add_argument("--time-scale", type=float, default=10.0)
    args = parser.parse_args(argv)
    return asyncio.run(_run(args.streams, args.lines, args.seconds, args.settle, args.time_scale))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
