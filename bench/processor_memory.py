"""Processor overhead with the in-process ``memory`` broker against a zero-latency upstream.

N requests are queued in three quota-gated queues (the guide's shape: tier-priority lanes,
classifying quota, fairness stamping) and drained by one in-process processor with W workers.
The upstream answers at once from another process (``bench/_zero_upstream.py``), so what is
measured is the processor itself: ingest, gates, lanes, HTTP client, result write. Baseline in
the same run: a bare aiohttp client posting the same N bodies with W concurrent tasks.

Reported: requests/s for both, the ratio, and processor CPU per request (this process's CPU,
the upstream runs elsewhere). Default short (2,000 requests, 64 workers); ``--full`` 20,000.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
from prometheus_client import CollectorRegistry

from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.processor.guide_spec import GUIDE_TEAMS, guide_spec, team_queues
from sluiceway.processor.producer import Producer, request
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import ProcessorSpec

TEAMS = tuple((team, tier, limit) for team, (tier, limit) in GUIDE_TEAMS.items())


def _start_upstream() -> tuple[subprocess.Popen[str], str]:
    script = Path(__file__).with_name("_zero_upstream.py")
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    return proc, line[-1]


def _settings(url: str, workers: int) -> ProcessorSpec:
    return guide_spec(team_queues(url), workers=workers, result_queue_name="results")


def _body() -> dict[str, object]:
    return {"model": "sim-model", "prompt": "summarize this", "max_tokens": 8}


async def _processor_run(url: str, count: int, workers: int) -> tuple[float, float]:
    broker, clock = MemoryBroker(), RealClock()
    producer, now = Producer(broker, clock=clock), clock.now()
    for index, (team, _, _) in enumerate(TEAMS):
        requests = [
            request(f"{team}-{i}", _body(), deadline=now + 3600, metadata={"team": team})
            for i in range(index, count, len(TEAMS))
        ]
        await producer.submit_many(requests, queue=f"team-{team}")
    cpu, wall = time.process_time(), time.perf_counter()
    async with Processor(
        _settings(url, workers), broker, clock=clock, registry=CollectorRegistry()
    ):
        for _ in range(count):
            assert await broker.pop_result("results", 60.0) is not None
    return time.perf_counter() - wall, time.process_time() - cpu


async def _baseline_run(url: str, count: int, workers: int) -> tuple[float, float]:
    body = json.dumps(_body()).encode()
    pending = iter(range(count))
    connector = aiohttp.TCPConnector(limit=workers)
    cpu, wall = time.process_time(), time.perf_counter()
    async with aiohttp.ClientSession(connector=connector) as http:

        async def worker() -> None:
            for _ in pending:
                async with http.post(
                    f"{url}/v1/completions", data=body, headers={"content-type": "application/json"}
                ) as resp:
                    await resp.read()

        await asyncio.gather(*(worker() for _ in range(workers)))
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench processor_memory")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--workers", type=int, default=64)
    args = parser.parse_args(argv)
    count = 20_000 if args.full else 2_000
    upstream, url = _start_upstream()
    try:
        base_wall, base_cpu = asyncio.run(_baseline_run(url, count, args.workers))
        proc_wall, proc_cpu = asyncio.run(_processor_run(url, count, args.workers))
    finally:
        upstream.kill()
        upstream.wait()
    base_rps, proc_rps = count / base_wall, count / proc_wall
    print(f"requests={count} workers={args.workers}")
    print(f"{'':12} {'req/s':>9} {'CPU us/req':>11}")
    print(f"{'bare client':12} {base_rps:>9.0f} {base_cpu / count * 1e6:>11.0f}")
    print(f"{'processor':12} {proc_rps:>9.0f} {proc_cpu / count * 1e6:>11.0f}")
    print(f"processor / bare client throughput: {proc_rps / base_rps:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
