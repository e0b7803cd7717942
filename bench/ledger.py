"""The capacity ledger's cost (``sluiceway router --ledger``): Redis commands, added TTFT.

Set-up: a private Redis; the simulator as a process (TTFT 10 ms, 2 ms between tokens,
16-token streams, never queueing); ``sluiceway router`` processes with flow control on and a
concurrency detector whose ``maxConcurrency`` (1,000) the load never reaches, so the ledger's
cap never binds: what is measured is its bookkeeping, never a wait for room. Each
configuration's routers are their own ledger group (``--pool-name``); with N > 1 the clients
take the replicas in turn.

(a) Redis commands per request, from ``INFO commandstats`` before and after (the bench's own
INFO left out), with only that configuration's routers up (an idle replica's renewals would
count otherwise): at low load (sequential requests, one at a time), under concurrent load
(closed-loop clients) and at 50 requests/s (an open loop: the least batching at the target
rate); the dispatch rate is printed beside. Redis counts the commands a Lua
script runs too, so two figures: the client's calls (EVALSHA, and whatever else a client sent)
and the total (with the script's own). Targets, on the client's calls: <= 2 per request at low
load, <= 1 per dispatch at >= 50 dispatches/s.

(b) The TTFT the ledger adds (first streamed byte, the client's view) against one replica
without it, at a fixed rate, in interleaved rounds (off, N = 1, 2, 3, off, ...), the median over
rounds of each round's p50 and p90. Target: N = 1 adds <= 1 ms at p50; N = 2 and 3 (the ledger
shared by replicas, against one replica without it) are printed unjudged.

    python -m bench ledger            # short: about a minute
    python -m bench ledger --full     # more requests and rounds
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import redis.asyncio as aioredis

from sluiceway.bench.isolation.replicas import started_process
from sluiceway.localservices import private_redis

TOKENS = 16
RATE = 20.0  # requests/s of the TTFT rounds
LOW_TARGET, HIGH_TARGET, HIGH_RATE, TTFT_TARGET_MS = 2.0, 1.0, 50.0, 1.0
CONFIG = """apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: concurrency-detector
  parameters: {maxConcurrency: 1000}
flowControl:
  saturationDetector: {pluginRef: concurrency-detector}
"""
PAYLOAD = {
    "model": "sim-model",
    "prompt": "hello there",
    "max_tokens": TOKENS,
    "stream": True,
    "ignore_eos": True,
}
# what the ledger's Lua scripts call (ledger/replicas.py): counted by Redis, never sent
SCRIPT_INNER = frozenset(
    [
        "time",
        "zrangebyscore",
        "zremrangebyscore",
        "hdel",
        "hget",
        "hgetall",
        "hset",
        "zadd",
        "hlen",
        "publish",
        "zrem",
        "zcard",
    ]
)
SIM_ARGS = [
    "-m", "sluiceway", "sim", "--port", "0", "--max-num-seqs", "4096",
    "--num-gpu-blocks", "100000", "--max-model-len", "4096",
    "--time-to-first-token", "10ms", "--inter-token-latency", "2ms",
]  # fmt: skip


@dataclass(frozen=True)
class Setup:
    """One configuration: ``replicas`` routers, with the ledger or without."""

    name: str
    replicas: int
    ledger: bool


SETUPS = (
    Setup("ledger off", 1, False),
    Setup("on, N=1", 1, True),
    Setup("on, N=2", 2, True),
    Setup("on, N=3", 3, True),
)


def router_args(config: Path, sim_url: str, pool: str, ledger: str | None) -> list[str]:
    """A quiet ``sluiceway router`` in front of ``sim_url`` in ledger group ``pool``."""
    args = [
        "-m", "sluiceway", "router", "--config", str(config), "--endpoints", sim_url,
        "--pool-name", pool, "--port", "0", "--log-level", "warning",
        "--access-log-sample", "0", "--drain-timeout", "1s",
    ]  # fmt: skip
    return args + (["--ledger", ledger] if ledger else [])


@contextlib.asynccontextmanager
async def _routers(setup: Setup, files: Path, sim_url: str, redis_url: str) -> AsyncIterator[Any]:
    """The routers of ``setup``, up until exit; yields their URLs in turn (a cycle)."""
    pool = f"bench-{setup.replicas}-{'on' if setup.ledger else 'off'}"
    args = router_args(files / "router.yaml", sim_url, pool, redis_url if setup.ledger else None)
    async with contextlib.AsyncExitStack() as stack:
        urls = [
            await stack.enter_async_context(started_process(args, files / f"{pool}-{i}.log"))
            for i in range(setup.replicas)
        ]
        yield itertools.cycle(urls)


async def _one(session: aiohttp.ClientSession, url: str) -> float | None:
    """One streamed completion; seconds to its first byte (None when it failed)."""
    start = time.perf_counter()
    ttft = None
    async with session.post(url + "/v1/completions", json=PAYLOAD) as resp:
        async for _ in resp.content.iter_any():
            if ttft is None:
                ttft = time.perf_counter() - start
        return ttft if resp.status == 200 else None


async def _sequential(session: aiohttp.ClientSession, urls: Iterator[str], count: int) -> int:
    return sum([await _one(session, next(urls)) is not None for _ in range(count)])


async def _concurrent(
    session: aiohttp.ClientSession, urls: Iterator[str], clients: int, seconds: float
) -> int:
    end = time.perf_counter() + seconds
    done = 0

    async def client() -> None:
        nonlocal done
        while time.perf_counter() < end:
            ok = await _one(session, next(urls)) is not None
            done += ok  # read after the await: the clients share it

    await asyncio.gather(*(client() for _ in range(clients)))
    return done


async def _paced(
    session: aiohttp.ClientSession, urls: Iterator[str], seconds: float, rate: float = RATE
) -> list[float]:
    """An open loop at ``rate`` requests/s; the TTFTs of those that succeeded."""
    start = time.perf_counter()
    tasks = []
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(_one(session, next(urls))))
    return [t for t in await asyncio.gather(*tasks) if t is not None]


@dataclass(frozen=True)
class Count:
    """Commands Redis ran while ``requests`` requests were served in ``seconds``."""

    label: str
    requests: int
    seconds: float
    evalsha: int
    client: int
    total: int

    def per(self, calls: int) -> float:
        return calls / max(1, self.requests)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


async def _commandstats(redis: Any) -> dict[str, int]:
    stats = await redis.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


async def _counted(redis: Any, label: str, work: Callable[[], Awaitable[int]]) -> Count:
    """Run ``work`` (it returns the requests served) between two reads of commandstats."""
    before = await _commandstats(redis)
    start = time.perf_counter()
    served = await work()
    seconds = time.perf_counter() - start
    after = await _commandstats(redis)
    delta = {k: n - before.get(k, 0) for k, n in after.items() if k != "info"}
    inner = sum(n for k, n in delta.items() if k in SCRIPT_INNER)
    total = sum(delta.values())
    evalsha = delta.get("evalsha", 0) + delta.get("evalsha_ro", 0)
    return Count(label, served, seconds, evalsha, total - inner, total)


@dataclass
class Ttft:
    """One configuration's TTFT p50 and p90 (ms) per round."""

    setup: Setup
    p50: list[float] = field(default_factory=list)
    p90: list[float] = field(default_factory=list)

    def add(self, ttfts: list[float]) -> None:
        self.p50.append(float(np.percentile(ttfts, 50)) * 1e3)
        self.p90.append(float(np.percentile(ttfts, 90)) * 1e3)


@dataclass(frozen=True)
class Plan:
    requests: int  # sequential requests per configuration
    clients: int  # concurrent closed-loop clients
    seconds: float  # of concurrent load, and of each TTFT round
    rounds: int


async def _commands(
    plan: Plan, files: Path, sim_url: str, redis_url: str
) -> list[tuple[Setup, list[Count]]]:
    """Per configuration, alone: sequential, concurrent and paced at the target rate."""
    out = []
    async with (
        aioredis.from_url(redis_url, decode_responses=True) as redis,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session,
    ):
        for setup in SETUPS:
            async with _routers(setup, files, sim_url, redis_url) as urls:
                await _sequential(session, urls, 3 * setup.replicas)  # connections, scripts
                low = await _counted(
                    redis, "sequential", lambda: _sequential(session, urls, plan.requests)
                )
                high = await _counted(
                    redis,
                    f"{plan.clients} concurrent",
                    lambda: _concurrent(session, urls, plan.clients, plan.seconds),
                )
                paced = await _counted(
                    redis,
                    f"{HIGH_RATE:g}/s paced",
                    lambda: _served(_paced(session, urls, plan.seconds, HIGH_RATE)),
                )
            out.append((setup, [low, high, paced]))
    return out


async def _ttft(plan: Plan, files: Path, sim_url: str, redis_url: str) -> list[Ttft]:
    results = [Ttft(s) for s in SETUPS]
    async with contextlib.AsyncExitStack() as stack:
        turns = [
            await stack.enter_async_context(_routers(s, files, sim_url, redis_url)) for s in SETUPS
        ]
        session = await stack.enter_async_context(
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        )
        for urls in turns:  # warm up connections and code paths
            await _paced(session, urls, 0.5)
        for _ in range(plan.rounds):
            for result, urls in zip(results, turns, strict=True):
                result.add(await _paced(session, urls, plan.seconds))
    return results


async def _served(ttfts: Awaitable[list[float]]) -> int:
    return len(await ttfts)


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _print_commands(rows: list[tuple[Setup, list[Count]]]) -> None:
    print("(a) Redis commands per request (client: EVALSHA + other calls sent; total: with the")
    print("    commands run inside the ledger's Lua script, which commandstats counts too)")
    head = f"{'':12} {'load':15} {'requests':>8} {'req/s':>7} {'evalsha':>8} {'client':>7}"
    print(f"{head} {'total':>7}  target (client)")
    for setup, counts in rows:
        for c, target in zip(counts, (LOW_TARGET, HIGH_TARGET, HIGH_TARGET), strict=True):
            verdict = f"<= {target:g}" if setup.ledger else ""
            print(
                f"{setup.name:12} {c.label:15} {c.requests:8d} {c.rate:7.1f} "
                f"{c.per(c.evalsha):8.2f} {c.per(c.client):7.2f} {c.per(c.total):7.2f}  {verdict}"
            )
    low, *high = rows[1][1]
    print(
        f"N=1, low load: {low.per(low.client):.2f} client calls per request "
        f"({low.client} for {low.requests}; target <= {LOW_TARGET:g}): "
        f"{_verdict(low.per(low.client) <= LOW_TARGET)}; "
        f"{low.per(low.total):.2f} commands in all"
    )
    for c in high:
        fast = c.rate >= 0.95 * HIGH_RATE  # a paced loop at the target rate lands just under it
        print(
            f"N=1, {c.rate:.0f} dispatches/s: {c.per(c.client):.2f} client calls per "
            f"dispatch ({c.client} for {c.requests}; target <= {HIGH_TARGET:g} at >= "
            f"{HIGH_RATE:g}/s): "
            f"{_verdict(fast and c.per(c.client) <= HIGH_TARGET)}"
            f"{'' if fast else ' (rate below the target rate)'}; "
            f"{c.per(c.total):.2f} commands in all"
        )


def _median(xs: list[float]) -> float:
    return float(np.median(xs)) if xs else float("nan")


def _print_ttft(results: list[Ttft], plan: Plan) -> None:
    print(
        f"(b) TTFT, ms: medians over {plan.rounds} interleaved rounds of {plan.seconds:g} s "
        f"at {RATE:g} req/s; added and on/off against the ledger off"
    )
    off = results[0]
    base50, base90 = _median(off.p50), _median(off.p90)
    print(
        f"{'':12} {'p50':>7} {'p90':>7} {'added p50':>10} {'added p90':>10} "
        f"{'p50 on/off':>11} {'p90 on/off':>11}"
    )
    for r in results:
        p50, p90 = _median(r.p50), _median(r.p90)
        added = "" if r is off else f"{p50 - base50:+10.2f} {p90 - base90:+10.2f}"
        ratio = "" if r is off else f"{p50 / base50:10.2f}x {p90 / base90:10.2f}x"
        note = " (unjudged)" if r.setup.replicas > 1 else ""
        print(f"{r.setup.name:12} {p50:7.2f} {p90:7.2f} {added:21} {ratio}{note}")
    added50 = _median(results[1].p50) - base50
    print(
        f"N=1 added TTFT p50: {added50:+.2f} ms (target <= {TTFT_TARGET_MS:g} ms): "
        f"{_verdict(added50 <= TTFT_TARGET_MS)}"
    )


async def _run(plan: Plan) -> None:
    with (
        private_redis() as redis,
        tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp,
    ):
        files = Path(tmp)
        (files / "router.yaml").write_text(CONFIG)
        async with started_process(SIM_ARGS, files / "sim.log") as sim_url:
            commands = await _commands(plan, files, sim_url, redis.url)
            ttft = await _ttft(plan, files, sim_url, redis.url)
    _print_commands(commands)
    print()
    _print_ttft(ttft, plan)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench ledger")
    ap.add_argument("--full", action="store_true", help="more requests and rounds")
    ap.add_argument("--requests", type=int, help="sequential requests per configuration")
    ap.add_argument("--clients", type=int, default=30, help="concurrent closed-loop clients")
    ap.add_argument("--seconds", type=float, help="of concurrent load, and per TTFT round")
    ap.add_argument("--rounds", type=int, help="interleaved TTFT rounds")
    args = ap.parse_args(argv)
    plan = Plan(
        requests=args.requests or (500 if args.full else 150),
        clients=args.clients,
        seconds=args.seconds or (5.0 if args.full else 2.0),
        rounds=args.rounds or (5 if args.full else 3),
    )
    asyncio.run(_run(plan))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
