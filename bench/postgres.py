"""The postgres transport beside the Redis broker, in the same run.

Part ``e2e``: one in-process processor drains N queued requests (a quota gate, classifying, 100
teams) against a zero-latency upstream in another process, once on ``redis-sortedset`` and once
on ``postgres``: requests/s, processor CPU per request and client round trips per request
(Redis: packed sends; PostgreSQL: statements sent). The private database runs with fsync off,
as the private Redis runs without persistence.

Part ``backlog``: a backlog queued before the processor starts (3 quota-gated queues, 1,000
teams): time from start to the first result and the processor's RSS, on both brokers.

Part ``idle``: statements per second of an idle processor with the default intervals (poll
1 s, reclaim 15 s) over a window, on both brokers; and how long an entry put on an idle queue
takes to reach the upstream, relative to the poll interval.

Default: quick (2,000 requests, a 100,000-entry backlog, a 20 s idle window). ``--full``:
10,000 requests and a 60 s idle window.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry

from bench.processor_throughput import count_round_trips, zero_upstream
from sluiceway.broker import open_broker
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.postgres import PostgresBroker
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.localservices import private_postgres, private_redis
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import MergeSpec, PoolSpec, ProcessorSpec, QueueSpec

RESULTS = "bench-results"
GATE = {"attribute": "team", "mode": "concurrency", "limit": "2", "gating_mode": "classifying"}


@dataclass(frozen=True)
class Backend:
    name: str  # transport
    url: str
    pool_size: int = 10  # postgres only

    @property
    def label(self) -> str:
        return self.name if self.name != "postgres" else f"postgres (pool {self.pool_size})"

    def options(self) -> BrokerOptions:
        settings = {"pool_size": self.pool_size} if self.name == "postgres" else {}
        return BrokerOptions(url=self.url, settings=settings)


def _entry(i: int, now: float, team: str) -> tuple[str, float]:
    data = {
        "id": f"e{i}",
        "deadline": now + 3600,
        "payload": {"model": "m", "prompt": "hi", "max_tokens": 1},
        "metadata": {"team": team},
    }
    return json.dumps({"internal": {}, "request_kind": "plain", "data": data}), now + 3600


def _settings(upstream: str, queues: list[str], workers: int, **kw: Any) -> ProcessorSpec:
    specs = [
        QueueSpec(
            id=q,
            queue_name=q,
            igw_base_url=upstream,
            pool_id="p",
            labels={"tier": ("interactive", "async", "batch")[i % 3]},
            gate_type="redis-quota",
            gate_params=GATE,
        )
        for i, q in enumerate(queues)
    ]
    base: dict[str, Any] = {
        "queues": specs,
        "pools": (PoolSpec(id="p", workers=workers),),
        "merge": MergeSpec(ordering="tier-priority"),
        "result_queue_name": RESULTS,
        "backlog_interval": 0,
    }
    base.update(kw)
    return ProcessorSpec(**base)


async def _reset(backend: Backend) -> None:
    if backend.name == "postgres":
        conn = await asyncpg.connect(backend.url)
        with contextlib.suppress(asyncpg.PostgresError):
            await conn.execute("DROP SCHEMA IF EXISTS sluiceway CASCADE")
        await conn.close()
    else:
        raw = aioredis.Redis.from_url(backend.url)
        await raw.flushall()
        await raw.aclose()


async def _fill(backend: Backend, queues: list[str], n: int, teams: int) -> None:
    await _reset(backend)
    broker = await open_broker(backend.name, BrokerOptions(url=backend.url))
    now = time.time()
    try:
        for start in range(0, n, 5000):
            chunk: dict[str, list[tuple[str, float]]] = {}
            for i in range(start, min(n, start + 5000)):
                chunk.setdefault(queues[i % len(queues)], []).append(
                    _entry(i, now, f"team-{i % teams}")
                )
            for queue, entries in chunk.items():
                await broker.enqueue(queue, entries)
    finally:
        await broker.aclose()


@asynccontextmanager
async def _processor(backend: Backend, settings: ProcessorSpec) -> AsyncIterator[Broker]:
    options = backend.options()
    broker = await open_broker(backend.name, options)
    stores = await open_quota_stores(backend.name, broker, options)
    try:
        async with Processor(settings, broker, registry=CollectorRegistry(), quota_store=stores):
            yield broker
    finally:
        await stores.aclose()
        await broker.aclose()


def _results_counter(backend: Backend) -> Callable[[], Awaitable[int]]:
    """Counts results over a connection of its own (not counted as the processor's trips)."""
    if backend.name == "postgres":
        conns: list[asyncpg.Connection] = []

        async def pg_count() -> int:
            if not conns:
                conns.append(await asyncpg.connect(backend.url))
            sql = "SELECT count(*) FROM sluiceway.results WHERE destination = $1"
            return int(await conns[0].fetchval(sql, RESULTS))

        return pg_count
    raw = aioredis.Redis.from_url(backend.url)

    async def redis_count() -> int:
        return int(await raw.llen(RESULTS))

    return redis_count


async def _until(count: Callable[[], Awaitable[int]], n: int) -> None:
    while await count() < n:  # noqa: ASYNC110 (a count read by polling, as an operator would)
        await asyncio.sleep(0.02)


def _trips(broker: Broker, redis_trips: int) -> int:
    return broker.round_trips if isinstance(broker, PostgresBroker) else redis_trips


async def _throughput(backend: Backend, upstream: str, n: int, workers: int) -> dict[str, float]:
    await _fill(backend, ["bench-e2e"], n, teams=100)
    count = _results_counter(backend)
    with count_round_trips() as redis_trips:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        async with _processor(backend, _settings(upstream, ["bench-e2e"], workers)) as broker:
            await _until(count, n)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            trips = _trips(broker, redis_trips["trips"])
    return {
        "req_per_s": n / wall,
        "cpu_ms_per_req": cpu / n * 1000,
        "round_trips_per_req": trips / n,
    }


async def _e2e_part(backends: list[Backend], n: int, workers: int) -> None:
    print(f"\ne2e: {n} requests, {workers} workers, quota gate (100 teams), zero-latency upstream")
    with zero_upstream() as upstream:
        rows = {b.label: await _throughput(b, upstream, n, workers) for b in backends}
    base = rows["redis-sortedset"]
    for name, row in rows.items():
        speed = row["req_per_s"] / base["req_per_s"]
        print(
            f"  {name:20s} {row['req_per_s']:8.0f} req/s ({speed:.2f}x)"
            f"  cpu {row['cpu_ms_per_req']:.3f} ms/req "
            f"({row['cpu_ms_per_req'] / base['cpu_ms_per_req']:.2f}x)"
            f"  round trips {row['round_trips_per_req']:.2f}/req"
        )


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _backlog(backend: Backend, upstream: str, n: int) -> str:
    queues = [f"team-q{i}" for i in range(3)]
    await _fill(backend, queues, n, teams=1000)
    count = _results_counter(backend)
    rss0, start = _rss_mb(), time.perf_counter()
    async with _processor(backend, _settings(upstream, queues, 64)):
        await _until(count, 1)
        first = time.perf_counter() - start
        await asyncio.sleep(2.0)
        rss = _rss_mb()
    return (
        f"  {backend.label:20s} {n} queued: first result {first * 1000:.0f} ms after start, "
        f"RSS {rss:.0f} MB ({rss - rss0:+.0f} MB for the processor)"
    )


async def _backlog_part(backends: list[Backend], n: int) -> None:
    print("\nbacklog: 3 quota-gated queues, 1,000 teams")
    with zero_upstream() as upstream:
        for backend in backends:
            print(await _backlog(backend, upstream, n))


async def _idle(backend: Backend, upstream: str, window: float) -> str:
    await _reset(backend)
    settings = _settings(upstream, ["idle-a", "idle-b", "idle-c"], 8, poll_interval=1.0)
    with count_round_trips() as redis_trips:
        async with _processor(backend, settings) as broker:
            await asyncio.sleep(2.0)  # start-up reads are not idle traffic
            before = _trips(broker, redis_trips["trips"])
            await asyncio.sleep(window)
            idle = _trips(broker, redis_trips["trips"]) - before
            wake = await _wake(backend, broker)
    return (
        f"  {backend.label:20s} {idle / window:6.2f} statements/s idle (3 queues, {window:.0f} s), "
        f"an arrival answered after {wake * 1000:.0f} ms (poll interval 1000 ms)"
    )


async def _wake(backend: Backend, broker: Broker) -> float:
    """Wall seconds from an enqueue on an idle queue to its result."""
    producer = await open_broker(backend.name, BrokerOptions(url=backend.url))
    try:
        start = time.perf_counter()
        await producer.enqueue("idle-b", [_entry(1, time.time(), "team-1")])
        await broker.pop_result(RESULTS, 10.0)
        return time.perf_counter() - start
    finally:
        await producer.aclose()


async def _idle_part(backends: list[Backend], window: float) -> None:
    print("\nidle: default intervals (poll 1 s, reclaim 15 s)")
    with zero_upstream() as upstream:
        for backend in backends:
            print(await _idle(backend, upstream, window))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench postgres")
    parser.add_argument("--full", action="store_true", help="10,000 requests, 60 s idle")
    parser.add_argument("--backlog", type=int, default=100_000, help="backlog size")
    parser.add_argument("--parts", default="e2e,backlog,idle", help="comma-separated parts")
    args = parser.parse_args(argv)
    n, window = (10_000, 60.0) if args.full else (2_000, 20.0)
    parts = set(args.parts.split(","))

    async def run() -> None:
        with private_redis(keyspace_events="KEA") as redis, private_postgres() as pg:
            backends = [Backend("redis-sortedset", redis.url), Backend("postgres", pg.url)]
            if "e2e" in parts:
                await _e2e_part([*backends, Backend("postgres", pg.url, pool_size=20)], n, 32)
            if "backlog" in parts:
                await _backlog_part(backends, args.backlog)
            if "idle" in parts:
                await _idle_part(backends, window)

    asyncio.run(run())
    return 0
