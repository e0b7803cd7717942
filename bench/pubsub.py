"""The processor on the ``gcp-pubsub`` transport, through the Pub/Sub emulator.

N requests are published to a request topic; a processor (one subscription, W workers,
lane stamping) sends each to a zero-latency upstream (``bench/_zero_upstream.py``) and
publishes its result to a result topic, acking each message after its result publish is
confirmed. Baseline in the same run, on the same emulator: a bare subscriber-publisher loop
(pull a batch, post each body with W concurrent requests, publish the batch's results in one
call, then ack the batch). Both runs drain the result topic the same way.

Reported: requests/s for both, the ratio, and CPU per request of this process (the emulator
and the upstream run elsewhere). Default short (1,000 requests, 64 workers); ``--full``
10,000. Needs gcloud's Pub/Sub emulator and the ``pubsub`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
from prometheus_client import CollectorRegistry

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.pubsub import open_pubsub_broker
from sluiceway.broker.pubsub_api import GrpcPubSub
from sluiceway.broker.pubsub_messages import Received
from sluiceway.clock import RealClock
from sluiceway.localservices import ServiceUnavailable, private_pubsub_emulator
from sluiceway.processor.headers import HeaderPolicy
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import MergeSpec, PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.wire.lanes import LANE_KEYS

PROJECT = "sluiceway-bench"
BODY = {"model": "sim-model", "prompt": "summarize this", "max_tokens": 8}


def _start_upstream() -> tuple[subprocess.Popen[str], str]:
    script = Path(__file__).with_name("_zero_upstream.py")
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()[-1]


def _path(kind: str, name: str) -> str:
    return f"projects/{PROJECT}/{kind}/{name}"


async def _topics(api: GrpcPubSub, run: str) -> None:
    for name in (f"{run}-requests", f"{run}-results"):
        await api.create_topic(_path("topics", name))
        await api.create_subscription(
            _path("subscriptions", f"{name}-sub"), _path("topics", name), ack_deadline_seconds=60
        )


async def _publish_requests(api: GrpcPubSub, run: str, count: int) -> None:
    deadline = time.time() + 3600
    for start in range(0, count, 500):
        bodies = [
            (json.dumps({"id": f"r-{i}", "deadline": deadline, "payload": BODY}).encode(), {})
            for i in range(start, min(count, start + 500))
        ]
        await api.publish(_path("topics", f"{run}-requests"), bodies)


async def _drain_results(api: GrpcPubSub, run: str, count: int) -> None:
    seen: set[str] = set()
    subscription = _path("subscriptions", f"{run}-results-sub")
    while len(seen) < count:
        got = await api.pull(subscription, 1000, wait=5.0)
        if got:
            await api.acknowledge(subscription, [m.ack_id for m in got])
        seen.update(json.loads(m.data)["id"] for m in got)


def _settings(url: str, run: str, workers: int) -> ProcessorSpec:
    queue = QueueSpec(
        id="requests", queue_name=f"{run}-requests-sub", igw_base_url=url, labels={"tier": "batch"}
    )
    merge = MergeSpec(
        ordering="tier-priority",
        headers=HeaderPolicy(stamp_lanes=True, lane_objectives={k: k for k in LANE_KEYS}),
    )
    return ProcessorSpec(
        queues=(queue,),
        pools=(PoolSpec("default", workers),),
        merge=merge,
        result_queue_name=f"{run}-results",
        batch_size=workers,
        buffer_per_queue=workers,
        backlog_interval=0,
    )


async def _processor_run(url: str, count: int, workers: int) -> tuple[float, float]:
    api = GrpcPubSub()
    await _topics(api, "proc")
    await _publish_requests(api, "proc", count)
    clock = RealClock()
    settings = {
        "project_id": PROJECT,
        "result_topic_id": "proc-results",
        "batch_size": workers,
        "claim_lease_ttl_seconds": 60,
        "topics": [{"subscriber_id": "proc-requests-sub"}],
    }
    broker = await open_pubsub_broker(BrokerOptions(settings=settings, clock=clock))
    cpu, wall = time.process_time(), time.perf_counter()
    async with Processor(
        _settings(url, "proc", workers), broker, clock=clock, registry=CollectorRegistry()
    ):
        await _drain_results(api, "proc", count)
    elapsed, used = time.perf_counter() - wall, time.process_time() - cpu
    await broker.aclose()
    await api.aclose()
    return elapsed, used


async def _bare_batch(
    api: GrpcPubSub, http: aiohttp.ClientSession, url: str, got: list[Received], workers: int
) -> None:
    limit = asyncio.Semaphore(workers)

    async def post(message: Received) -> bytes:
        payload = json.dumps(json.loads(message.data)["payload"]).encode()
        async with limit, http.post(f"{url}/v1/completions", data=payload) as resp:
            text = await resp.text()
        record = {"id": json.loads(message.data)["id"], "status_code": 200, "payload": text}
        return json.dumps(record).encode()

    records = await asyncio.gather(*(post(m) for m in got))
    await api.publish(_path("topics", "bare-results"), [(r, {}) for r in records])
    await api.acknowledge(_path("subscriptions", "bare-requests-sub"), [m.ack_id for m in got])


async def _baseline_run(url: str, count: int, workers: int) -> tuple[float, float]:
    api = GrpcPubSub()
    await _topics(api, "bare")
    await _publish_requests(api, "bare", count)
    subscription = _path("subscriptions", "bare-requests-sub")
    cpu, wall = time.process_time(), time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=workers)) as http:

        async def loop() -> None:
            while got := await api.pull(subscription, workers, wait=2.0):
                await _bare_batch(api, http, url, got, workers)

        consumer = asyncio.create_task(loop())
        await _drain_results(api, "bare", count)
        consumer.cancel()
        await asyncio.gather(consumer, return_exceptions=True)
    elapsed, used = time.perf_counter() - wall, time.process_time() - cpu
    await api.aclose()
    return elapsed, used


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench pubsub")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--workers", type=int, default=64)
    args = parser.parse_args(argv)
    count = 10_000 if args.full else 1_000
    try:
        emulator_cm = private_pubsub_emulator()
        emulator = emulator_cm.__enter__()
    except ServiceUnavailable as exc:
        print(f"skipped: {exc}")
        return 0
    upstream, url = _start_upstream()
    os.environ["PUBSUB_EMULATOR_HOST"] = emulator.host_port
    try:
        base_wall, base_cpu = asyncio.run(_baseline_run(url, count, args.workers))
        proc_wall, proc_cpu = asyncio.run(_processor_run(url, count, args.workers))
    finally:
        upstream.kill()
        upstream.wait()
        emulator_cm.__exit__(None, None, None)
    base_rps, proc_rps = count / base_wall, count / proc_wall
    print(f"requests={count} workers={args.workers} (through the Pub/Sub emulator)")
    print(f"{'':16} {'req/s':>9} {'CPU us/req':>11}")
    print(f"{'bare sub/pub loop':16} {base_rps:>9.0f} {base_cpu / count * 1e6:>11.0f}")
    print(f"{'processor':16} {proc_rps:>9.0f} {proc_cpu / count * 1e6:>11.0f}")
    print(f"processor / bare loop throughput: {proc_rps / base_rps:.2f}")
    print(f"processor / bare loop CPU per request: {proc_cpu / max(base_cpu, 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
