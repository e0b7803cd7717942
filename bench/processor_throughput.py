"""Processor throughput on Redis: the durable broker cycle, round trips and commandstats.

Part ``broker`` (always): N requests through the ``redis-sortedset`` broker's durable cycle
(one ingest loop peeks a batch and claims it in one call; C workers ack each with its result),
against a baseline measured in the same run: upstream's old destructive cycle (ZPOPMIN + LPUSH,
no claim, no fencing) at the same concurrency. Reports requests/s, client CPU per request,
client round trips per request (what "Redis commands per request" counts) and Redis
commandstats per request.

Part ``e2e``: one in-process processor on Redis against a zero-latency upstream (another
process): processor CPU per request, throughput beside a bare aiohttp client at the same
concurrency, added latency p50/p99 of single requests, round trips and commandstats per request;
beside them the *floor*: the least a durable consumer does per request (batch claim, POST,
pipelined ack, nothing else), which bounds the ratio any processor of this design can reach.

Part ``backlog``: a pre-filled backlog (1,000 teams in 3 quota-gated queues, and 100 queues):
processor RSS and time from start to first result; import time reported separately.

Part ``idle``: ZADD-to-wake latency of an idle consumer with keyspace events on and off
(``poll_interval_ms`` 1000).

Default: short (about a minute). ``--full``: the issue's sizes (20,000 requests, 64 workers,
backlogs of 100,000).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry
from redis.asyncio.connection import Connection

from sluiceway.broker.base import (
    BrokerOptions,
    Claim,
    ClaimAsk,
    Entry,
    ResultWrite,
)
from sluiceway.broker.keys import split_claim_key
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.broker.redis import RedisBroker, open_redis_broker
from sluiceway.localservices import private_redis
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import MergeSpec, PoolSpec, ProcessorSpec, QueueSpec

QUEUE = "bench-queue"
RESULTS = "bench-results"
NOW = 1_700_000_000.0


@contextmanager
def count_round_trips() -> Iterator[Counter[str]]:
    """Count client round trips: one packed send is one trip (a pipeline is one)."""
    counter: Counter[str] = Counter()
    original = Connection.send_packed_command

    async def counting(self: Connection, command: Any, check_health: bool = True) -> None:
        counter["trips"] += 1
        await original(self, command, check_health)

    Connection.send_packed_command = counting  # type: ignore[method-assign]
    try:
        yield counter
    finally:
        Connection.send_packed_command = original  # type: ignore[method-assign]


def _member(i: int) -> str:
    token = f"{i:032x}"
    internal = {"request_queue_name": QUEUE, "request_token": token}
    data = {"id": f"r{i}", "deadline": NOW + 3600, "payload": {"prompt": "x" * 64}}
    return json.dumps({"internal": internal, "request_kind": "plain", "data": data})


async def _commandstats(raw: aioredis.Redis) -> dict[str, int]:
    info = await raw.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in info.items()}


async def _fill(raw: aioredis.Redis, n: int) -> None:
    pipe = raw.pipeline(transaction=False)
    for start in range(0, n, 1000):
        pipe.zadd(QUEUE, {_member(i): NOW + i for i in range(start, min(n, start + 1000))})
    await pipe.execute()


async def _durable_cycle(broker: RedisBroker, workers: int, batch: int) -> int:
    """One ingest loop (peek a batch, claim it in one call) feeding ``workers`` acking tasks,
    as the processor does; returns how many results were pushed."""
    claims: asyncio.Queue[Claim | None] = asyncio.Queue(maxsize=workers * 2)

    async def ingest() -> None:
        while entries := await broker.peek(QUEUE, batch):
            for outcome in await broker.claim_many([_ask(entry) for entry in entries]):
                if outcome.claim is not None:
                    await claims.put(outcome.claim)
        for _ in range(workers):
            await claims.put(None)

    async def worker() -> int:
        done = 0
        while (claim := await claims.get()) is not None:
            done += await _ack(broker, claim)
        return done

    results = await asyncio.gather(ingest(), *(worker() for _ in range(workers)))
    return sum(r for r in results if r is not None)


def _ask(entry: Entry) -> ClaimAsk:
    token = json.loads(entry.member)["internal"]["request_token"]
    return ClaimAsk(entry, f"r{int(token, 16)}", token, "0" * 16, NOW + 300)


async def _ack(broker: RedisBroker, claim: Claim) -> int:
    request_id, token = split_claim_key(claim.key)
    record = json.dumps({"id": request_id, "status_code": 200, "payload": "ok"})
    return int(await broker.ack(claim, ResultWrite(RESULTS, record, request_id, token)))


async def _destructive_consumer(raw: aioredis.Redis) -> int:
    """Upstream's snapshot cycle: pop (lost on a crash), push the result; no claim."""
    done = 0
    while popped := await raw.zpopmin(QUEUE, 1):
        member, _score = popped[0]
        request_id = json.loads(member)["data"]["id"]
        await raw.lpush(RESULTS, json.dumps({"id": request_id, "status_code": 200}))
        done += 1
    return done


async def _measure(url: str, n: int, run: Callable[[], Awaitable[int]]) -> dict[str, float]:
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    await raw.flushall()
    await _fill(raw, n)
    await raw.config_resetstat()
    with count_round_trips() as trips:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        done = await run()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stats = await _commandstats(raw)
    await raw.aclose()
    assert done == n, f"answered {done} of {n}"
    return {
        "req_per_s": n / wall,
        "cpu_ms_per_req": cpu / n * 1000,
        "round_trips_per_req": trips["trips"] / n,
        "redis_calls_per_req": sum(v for k, v in stats.items() if k != "config") / n,
        "evalsha_per_req": stats.get("evalsha", 0) / n,
    }


async def _gather_sum(coros: Iterable[Awaitable[int]]) -> int:
    return sum(await asyncio.gather(*coros))


async def _broker_part(url: str, n: int, consumers: int, batch: int) -> None:
    broker = await open_redis_broker(BrokerOptions(url=url))
    assert isinstance(broker, RedisBroker)
    durable = await _measure(url, n, lambda: _durable_cycle(broker, consumers, batch))
    await broker.aclose()
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    baseline = await _measure(
        url, n, lambda: _gather_sum(_destructive_consumer(raw) for _ in range(consumers))
    )
    await raw.aclose()
    print(f"broker cycle, {n} requests, {consumers} workers, batch {batch}")
    print(f"{'':24}{'durable (claims)':>18}{'destructive baseline':>22}{'ratio':>8}")
    for key in durable:
        ratio = durable[key] / baseline[key] if baseline[key] else float("nan")
        print(f"{key:24}{durable[key]:18.3f}{baseline[key]:22.3f}{ratio:8.2f}")


async def _wake_latency(url: str, samples: int, poll_interval: float) -> list[float]:
    """Seconds from a ZADD to the moment an idle consumer's wait returns (it then peeks)."""
    broker = await open_redis_broker(BrokerOptions(url=url))
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    loop = asyncio.get_running_loop()
    out = []
    await broker.wait_for_work([QUEUE], 0.01)  # subscribe once, as a running consumer has
    for i in range(samples):
        waiter = asyncio.create_task(broker.wait_for_work([QUEUE], poll_interval))
        await asyncio.sleep(poll_interval * (i + 0.5) / (samples + 1))  # spread the phases
        start = loop.time()
        await raw.zadd(QUEUE, {f"m{i}": NOW})
        await waiter
        out.append(loop.time() - start)
    await raw.aclose()
    await broker.aclose()
    return out


async def _idle_part(samples: int, poll_interval: float) -> None:
    for events in ("KEA", ""):
        with private_redis(keyspace_events=events) as server:
            lat = await _wake_latency(server.url, samples, poll_interval)
        mode = "events on " if events else "events off"
        print(
            f"idle ZADD-to-wake, {mode} (poll {poll_interval * 1000:.0f} ms): "
            f"p50 {statistics.median(lat) * 1000:8.2f} ms, max {max(lat) * 1000:8.2f} ms"
        )


@contextmanager
def zero_upstream() -> Iterator[str]:
    """The zero-latency upstream in its own process (so its CPU is not ours)."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench._zero_upstream"], cwd=root, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().split()[-1]
    finally:
        proc.terminate()
        proc.wait(10)


def _raw_entry(i: int, now: float, team: str = "t") -> tuple[str, float]:
    data = {
        "id": f"e{i}",
        "deadline": now + 3600,
        "payload": {"model": "m", "prompt": "hi", "max_tokens": 1},
        "metadata": {"team": team},
    }
    return json.dumps({"internal": {}, "request_kind": "plain", "data": data}), now + 3600


def _settings(upstream: str, queues: list[str], workers: int, gate: bool) -> ProcessorSpec:
    params = {
        "attribute": "team",
        "mode": "concurrency",
        "limit": "2",
        "gating_mode": "classifying",
    }
    specs = [
        QueueSpec(
            id=q,
            queue_name=q,
            igw_base_url=upstream,
            pool_id="p",
            labels={"tier": ("interactive", "async", "batch")[i % 3]},
            gate_type="redis-quota" if gate else "",
            gate_params=params if gate else {},
        )
        for i, q in enumerate(queues)
    ]
    return ProcessorSpec(
        queues=specs,
        pools=(PoolSpec(id="p", workers=workers),),
        merge=MergeSpec(ordering="tier-priority"),
        result_queue_name=RESULTS,
        backlog_interval=0,
    )


async def _fill_queues(raw: aioredis.Redis, queues: list[str], n: int, teams: int) -> None:
    now = time.time()
    pipe = raw.pipeline(transaction=False)
    for start in range(0, n, 2000):
        chunk: dict[str, dict[str, float]] = {}
        for i in range(start, min(n, start + 2000)):
            member, score = _raw_entry(i, now, f"team-{i % teams}")
            chunk.setdefault(queues[i % len(queues)], {})[member] = score
        for queue, mapping in chunk.items():
            pipe.zadd(queue, mapping)
        await pipe.execute()


@asynccontextmanager
async def _processor(url: str, settings: ProcessorSpec) -> AsyncIterator[None]:
    options = BrokerOptions(url=url)
    broker = await open_redis_broker(options)
    stores = await open_quota_stores("redis-sortedset", broker, options)
    try:
        async with Processor(settings, broker, registry=CollectorRegistry(), quota_store=stores):
            yield
    finally:
        await stores.aclose()
        await broker.aclose()


async def _until_results(raw: aioredis.Redis, n: int) -> int:
    """Wait for ``n`` results; returns the polls made. The poll runs in the processor's
    process, so it is kept rare (0.05 s, 0.02 s near the end) to keep its CPU off the
    processor's figure."""
    polls = 1
    while (done := await raw.llen(RESULTS)) < n:
        polls += 1
        await asyncio.sleep(0.02 if n - done < 100 else 0.05)
    return polls


async def _e2e_throughput(
    url: str, upstream: str, n: int, workers: int, *, gate: bool = False
) -> dict[str, float]:
    """One processor draining ``n`` queued requests; ``gate`` adds a redis-quota gate
    (classifying, 100 teams) so its acquire/release round trips are counted too."""
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    await raw.flushall()
    await _fill_queues(raw, ["bench-e2e"], n, teams=100 if gate else 1)
    await raw.config_resetstat()
    settings = _settings(upstream, ["bench-e2e"], workers, gate=gate)
    with count_round_trips() as trips:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        async with _processor(url, settings):
            polls = await _until_results(raw, n)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stats = await _commandstats(raw)
    await raw.aclose()
    return {
        "req_per_s": n / wall,
        "cpu_ms_per_req": cpu / n * 1000,
        "round_trips_per_req": (trips["trips"] - polls) / n,
        "redis_calls_per_req": sum(v for k, v in stats.items() if k not in ("config", "llen")) / n,
    }


def _session(workers: int) -> aiohttp.ClientSession:
    """A client session as the processor's (same pool size and keep-alive)."""
    connector = aiohttp.TCPConnector(limit=workers, limit_per_host=workers, keepalive_timeout=90)
    return aiohttp.ClientSession(connector=connector)


BODY = json.dumps({"model": "m", "prompt": "hi", "max_tokens": 1}, separators=(",", ":"))


async def _bare_client(upstream: str, n: int, workers: int) -> dict[str, float]:
    """The baseline: ``workers`` tasks POSTing the same body to the same upstream over a
    pool like the processor's (keep-alive, ``workers`` connections); nothing else."""
    left = n
    headers = {"content-type": "application/json"}

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            async with session.post(f"{upstream}/v1/completions", data=BODY, headers=headers) as r:
                await r.read()

    async with _session(workers) as session:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(workers)))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"req_per_s": n / wall, "cpu_ms_per_req": cpu / n * 1000}


async def _floor(url: str, upstream: str, n: int, workers: int) -> dict[str, float]:
    """The least a durable consumer does per request in Python: batches of 10 peeked and
    claimed in one call, one POST, one fenced ack (pipelined per loop turn); no decoding,
    gates, lanes, retries, metrics or cancellation watch. What it reaches bounds the ratio
    any processor of this design (claim + ack on Redis, asyncio, aiohttp) can reach."""
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    await raw.flushall()
    await _fill_queues(raw, ["bench-floor"], n, teams=1)
    broker = await open_redis_broker(BrokerOptions(url=url))
    claims: asyncio.Queue[Claim | None] = asyncio.Queue(maxsize=workers)
    serial = itertools.count()

    async def feed() -> None:
        while entries := await broker.peek("bench-floor", 10):
            asks = [ClaimAsk(e, f"f{i}", f"{i:032x}", "0" * 16, time.time() + 300)
                    for i, e in zip(serial, entries, strict=False)]  # fmt: skip
            for outcome in await broker.claim_many(asks):
                if outcome.claim is not None:
                    await claims.put(outcome.claim)
        for _ in range(workers):
            await claims.put(None)

    async def work(session: aiohttp.ClientSession) -> None:
        while (claim := await claims.get()) is not None:
            async with session.post(f"{upstream}/v1/completions", data=BODY) as resp:
                body = await resp.text()
            await broker.ack(claim, ResultWrite(RESULTS, body, "f", "t"))

    # Round trips are counted as in the processor's run, so both pay the counter alike.
    with count_round_trips() as trips:
        async with _session(workers) as session:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            await asyncio.gather(feed(), *(work(session) for _ in range(workers)))
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    assert await raw.llen(RESULTS) == n
    await broker.aclose()
    await raw.aclose()
    return {
        "req_per_s": n / wall,
        "cpu_ms_per_req": cpu / n * 1000,
        "round_trips_per_req": trips["trips"] / n,
    }


async def _latency(url: str, upstream: str, samples: int) -> tuple[list[float], list[float]]:
    """Single requests through the idle processor vs. straight to the upstream (seconds)."""
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    await raw.flushall()
    through, direct = [], []
    async with _processor(url, _settings(upstream, ["bench-lat"], 8, gate=False)):
        await asyncio.sleep(0.2)
        for i in range(samples):
            member, score = _raw_entry(i, time.time())
            start = time.perf_counter()
            await raw.zadd("bench-lat", {member: score})
            await raw.brpop([RESULTS], timeout=10)
            through.append(time.perf_counter() - start)
    async with aiohttp.ClientSession() as session:
        for _ in range(samples):
            start = time.perf_counter()
            async with session.post(f"{upstream}/v1/completions", data="{}") as resp:
                await resp.read()
            direct.append(time.perf_counter() - start)
    await raw.aclose()
    return through, direct


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


async def _e2e_part(url: str, n: int, workers: int, samples: int, rounds: int) -> None:
    """Processor, bare client and floor interleaved ``rounds`` times (medians), so that a
    drifting machine (CPU steal, frequency) hits all three alike."""
    proc, bare, floor = [], [], []
    with zero_upstream() as upstream:
        for _ in range(rounds):
            proc.append(await _e2e_throughput(url, upstream, n, workers))
            bare.append(await _bare_client(upstream, n, workers))
            floor.append(await _floor(url, upstream, n, workers))
        gated = await _e2e_throughput(url, upstream, n, workers, gate=True)
        through, direct = await _latency(url, upstream, samples)
    p, b, f = _median(proc), _median(bare), _median(floor)
    print(f"\nend to end on Redis, {n} requests, {workers} workers, zero-latency upstream")
    print(f"(medians of {rounds} interleaved rounds)")
    print(f"{'':24}{'processor':>12}{'bare aiohttp':>14}{'ratio':>8}{'floor':>10}{'ratio':>8}")
    for key in ("req_per_s", "cpu_ms_per_req"):
        print(
            f"{key:24}{p[key]:12.3f}{b[key]:14.3f}{p[key] / b[key]:8.2f}"
            f"{f[key]:10.3f}{f[key] / b[key]:8.2f}"
        )
    print(f"{'ratio per round':24}" + " ".join(
        f"{x['req_per_s'] / y['req_per_s']:.2f}" for x, y in zip(proc, bare, strict=True)
    ))  # fmt: skip
    print(f"{'round_trips_per_req':24}{p['round_trips_per_req']:12.3f}{'':22}"
          f"{f['round_trips_per_req']:10.3f}")  # fmt: skip
    print(f"{'redis_calls_per_req':24}{p['redis_calls_per_req']:12.3f}")
    above = p["cpu_ms_per_req"] - f["cpu_ms_per_req"]
    print(f"{'cpu above the floor':24}{above:12.3f} ms per request")
    print("with a redis-quota gate (classifying, 100 teams):")
    for key, value in gated.items():
        print(f"  {key:22}{value:12.3f}")
    for q, name in ((0.5, "p50"), (0.99, "p99")):
        added = _pct(through, q) - _pct(direct, q)
        print(
            f"added latency {name}: {added:7.2f} ms (through {_pct(through, q):.2f}, "
            f"direct {_pct(direct, q):.2f})"
        )


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _backlog_shape(url: str, upstream: str, queues: list[str], n: int, teams: int) -> str:
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    await raw.flushall()
    await _fill_queues(raw, queues, n, teams)
    rss0 = _rss_mb()
    start = time.perf_counter()
    settings = _settings(upstream, queues, 64, gate=True)
    async with _processor(url, settings):
        await raw.brpop([RESULTS], timeout=60)
        first = time.perf_counter() - start
        await asyncio.sleep(2.0)
        rss = _rss_mb()
    await raw.aclose()
    return (
        f"{n} queued, {teams} teams, {len(queues)} queues: first result {first * 1000:.0f} ms "
        f"after start, RSS {rss:.0f} MB ({rss - rss0:+.0f} MB for the processor)"
    )


def _import_seconds() -> float:
    code = (
        "import time; t = time.perf_counter(); import sluiceway.processor.service, "
        "sluiceway.broker.redis; print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


async def _backlog_part(url: str, n: int) -> None:
    print(f"\nbacklog (imports take {_import_seconds() * 1000:.0f} ms, excluded)")
    with zero_upstream() as upstream:
        teams = [f"team-q{i}" for i in range(3)]
        print(await _backlog_shape(url, upstream, teams, n, teams=1000))
        many = [f"queue-{i:03d}" for i in range(100)]
        print(await _backlog_shape(url, upstream, many, n, teams=100))


async def _heartbeat_part(url: str, held: int) -> None:
    """Redis round trips of one heartbeat round over ``held`` claims: one renew per claim
    (the baseline, as before batching) beside the processor's batched heartbeat."""
    broker = await open_redis_broker(BrokerOptions(url=url))
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        await raw.delete(QUEUE, RESULTS)
        await _fill(raw, held)
        entries = await broker.peek(QUEUE, held)
        claims = [o.claim for o in await broker.claim_many([_ask(e) for e in entries]) if o.claim]
        with count_round_trips() as one_by_one:
            for claim in claims:
                await broker.renew(claim, lease_until=NOW + 600)
        with count_round_trips() as batched:
            await broker.renew_many([(claim, NOW + 900) for claim in claims])
        print(f"\nheartbeat, {len(claims)} claims held: round trips per claim per round")
        print(f"  one renew per claim (before) {one_by_one['trips'] / len(claims):8.3f}")
        print(f"  batched (after)              {batched['trips'] / len(claims):8.3f}")
    finally:
        await raw.delete(QUEUE, f"{QUEUE}:claimed", f"{QUEUE}:claim-owners", f"{QUEUE}:claims-idx")
        await raw.aclose()
        await broker.aclose()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench processor_throughput")
    parser.add_argument("--full", action="store_true", help="20,000 requests, 64 consumers")
    args = parser.parse_args(argv)
    n, workers = (20_000, 64) if args.full else (3_000, 16)
    backlog = 100_000 if args.full else 20_000

    async def run() -> None:
        with private_redis(keyspace_events="KEA") as server:
            await _broker_part(server.url, n, workers, batch=10)
            await _e2e_part(
                server.url,
                n,
                64 if args.full else 32,
                200 if args.full else 50,
                rounds=3,
            )
            await _heartbeat_part(server.url, 64 if args.full else 32)
            await _backlog_part(server.url, backlog)
        await _idle_part(20 if args.full else 6, poll_interval=1.0)

    asyncio.run(run())
    return 0
