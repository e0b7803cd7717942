"""Processor throughput on Redis: the durable broker cycle, round trips and commandstats.

Part ``broker`` (always): N requests through the ``redis-sortedset`` broker's durable cycle
(one ingest loop peeks a batch and claims each entry; C workers ack each with its result), against a
baseline measured in the same run: upstream's old destructive cycle (ZPOPMIN + LPUSH, no claim,
no fencing) at the same concurrency. Reports requests/s, client CPU per request, client round
trips per request (decisions.md 17) and Redis commandstats per request.

Part ``idle``: ZADD-to-wake latency of an idle consumer with keyspace events on and off
(``poll_interval_ms`` 1000 when off).

Default: short (a few seconds). ``--full``: 20,000 requests, 64 consumers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.connection import Connection

from sluiceway.broker.base import BrokerOptions, Claim, Entry, ResultWrite, claim_key
from sluiceway.broker.keys import split_claim_key
from sluiceway.broker.redis import RedisBroker, open_redis_broker
from sluiceway.localservices import private_redis

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
    """One ingest loop (peek a batch, claim each) feeding ``workers`` acking tasks, as the
    processor does; returns how many results were pushed."""
    claims: asyncio.Queue[Claim | None] = asyncio.Queue(maxsize=workers * 2)

    async def ingest() -> None:
        while entries := await broker.peek(QUEUE, batch):
            for entry in entries:
                claim = await _claim(broker, entry)
                if claim is not None:
                    await claims.put(claim)
        for _ in range(workers):
            await claims.put(None)

    async def worker() -> int:
        done = 0
        while (claim := await claims.get()) is not None:
            done += await _ack(broker, claim)
        return done

    results = await asyncio.gather(ingest(), *(worker() for _ in range(workers)))
    return sum(r for r in results if r is not None)


async def _claim(broker: RedisBroker, entry: Entry) -> Claim | None:
    token = json.loads(entry.member)["internal"]["request_token"]
    key = claim_key(f"r{int(token, 16)}", token)
    return await broker.claim(entry, key=key, owner="0" * 16, lease_until=NOW + 300)


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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench processor_throughput")
    parser.add_argument("--full", action="store_true", help="20,000 requests, 64 consumers")
    args = parser.parse_args(argv)
    n, consumers = (20_000, 64) if args.full else (3_000, 16)

    async def run() -> None:
        with private_redis(keyspace_events="KEA") as server:
            await _broker_part(server.url, n, consumers, batch=10)
        await _idle_part(20 if args.full else 6, poll_interval=1.0)

    asyncio.run(run())
    return 0
