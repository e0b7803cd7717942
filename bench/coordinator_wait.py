"""Held wait-mode connections: wake-up latency, memory and idle Redis work per waiter.

N clients hold wait-mode requests open on one coordinator (a separate process pinned to core
0; this load generator runs on core 1). Then, with nothing landing, Redis commandstats over a
few seconds give the commands each held connection costs per second while idle. Then results
land in the waiters' mailboxes at a fixed rate (this script plays the processor and pushes
each result itself, so the time it landed is known exactly): wake-up latency is the time from
the push to the answer at the client. The coordinator's RSS is read while all are held.

Modes: ``notify`` (keyspace events; one subscription per tenant) beside ``poll`` (upstream's
200 ms look per waiter), in the same run. Targets: wake-up p50 <= 20 ms, idle commands per
waiter per second <= 0.2 in notify mode.

Default: 300 waiters, results at 100/s, a 16 s idle window (one whole backstop interval of
notify mode). ``--full``: 1,000 waiters.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aioredis
import yaml

from sluiceway.localservices import RedisServer, private_redis
from sluiceway.wire import ResultRecord

GUIDE = Path(__file__).parent.parent / "tests/fixtures/guide/coordinator-config.yaml"
TENANT = "batch"
QUEUE = "team-batch"


@dataclass
class Figures:
    mode: str
    waiters: int
    idle_commands_per_waiter_s: float
    wake_p50_ms: float
    wake_p99_ms: float
    rss_mib: float
    cpu_ms_per_request: float


def _raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _config(tmp: Path, redis_url: str, mode: str) -> Path:
    doc = yaml.safe_load(GUIDE.read_text())
    doc["gateway"]["address"] = "http://127.0.0.1:9"  # no passthrough in this benchmark
    params = doc["pipeline"]["steps"][0]["params"]
    params.update({"redis_url": redis_url, "wakeup_mode": mode, "wait_cap_seconds": 3600})
    params["timeouts"] = {"wait": {"default_seconds": 3600, "max_seconds": 3600}}
    path = tmp / f"coordinator-{mode}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@contextlib.asynccontextmanager
async def coordinator_process(
    config: Path, *extra: str, pin: bool = True
) -> AsyncIterator[tuple[str, int]]:
    """``sluiceway coordinator --config CONFIG`` on a free port (pinned to one core when
    ``pin`` and the machine has more): its URL and pid, stopped on exit."""
    cmd = [sys.executable, "-m", "sluiceway", "coordinator", "--config", str(config)]
    cmd += ["--port", "0", *extra]
    if pin and (os.cpu_count() or 1) > 1:
        cmd = ["taskset", "-c", "0", *cmd]
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().split()
        yield line[2], proc.pid
    finally:
        proc.terminate()
        await proc.wait()


def rss_mib(pid: int) -> float:
    """The resident memory of process ``pid`` in MiB (0 when unreadable)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _commands(raw: aioredis.Redis) -> int:
    stats: dict[str, Any] = await raw.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info")


async def _hold(
    http: aiohttp.ClientSession, url: str, request_id: str, arrived: dict[str, float]
) -> int:
    headers = {
        "x-llm-d-tenant": TENANT,
        "x-llm-d-async-mode": "wait",
        "x-request-id": request_id,
    }
    body = {"model": "sim-model", "prompt": "hi", "max_tokens": 4}
    async with http.post(f"{url}/v1/completions", json=body, headers=headers) as reply:
        await reply.read()
        arrived[request_id] = time.monotonic()
        return reply.status


async def _all_queued(raw: aioredis.Redis, n: int) -> None:
    """Every request queued, so every connection is held (Redis offers no event for a count)."""
    while True:
        if await raw.zcard(QUEUE) >= n:
            return
        await asyncio.sleep(0.05)


async def _run_mode(
    server: RedisServer, tmp: Path, mode: str, n: int, rate: float, idle_s: float
) -> Figures:
    raw = aioredis.Redis.from_url(server.url)
    await raw.flushall()
    arrived: dict[str, float] = {}
    landed: dict[str, float] = {}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None)
    async with (
        coordinator_process(_config(tmp, server.url, mode)) as (url, pid),
        aiohttp.ClientSession(connector=connector, timeout=timeout) as http,
    ):
        ids = [f"b-{i}" for i in range(n)]
        calls = [asyncio.create_task(_hold(http, url, rid, arrived)) for rid in ids]
        await _all_queued(raw, n)
        await asyncio.sleep(0.5)  # let each hold reach its first wait
        cpu0, before = _cpu_seconds(pid), await _commands(raw)
        await asyncio.sleep(idle_s)
        idle = (await _commands(raw) - before) / n / idle_s
        rss = rss_mib(pid)
        start = time.monotonic()
        for i, rid in enumerate(ids):
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            record = ResultRecord.ok(f"{TENANT}:{rid}", 200, '{"ok":true}').encode()
            landed[rid] = time.monotonic()
            await raw.lpush(f"results:req:{TENANT}:{rid}", record)
        statuses = await asyncio.gather(*calls)
        cpu = _cpu_seconds(pid) - cpu0
    await raw.aclose()
    assert all(s == 200 for s in statuses), statuses
    waits = sorted((arrived[r] - landed[r]) * 1000 for r in ids)
    return Figures(
        mode=mode,
        waiters=n,
        idle_commands_per_waiter_s=idle,
        wake_p50_ms=statistics.median(waits),
        wake_p99_ms=waits[min(len(waits) - 1, int(len(waits) * 0.99))],
        rss_mib=rss,
        cpu_ms_per_request=cpu * 1000 / n,
    )


def _print(rows: list[Figures]) -> None:
    cols = ["mode", "waiters", "idle cmd/waiter/s", "wake p50 ms", "wake p99 ms", "RSS MiB"]
    cols.append("CPU ms/req")
    print(" | ".join(cols))
    for r in rows:
        print(
            f"{r.mode} | {r.waiters} | {r.idle_commands_per_waiter_s:.3f} | "
            f"{r.wake_p50_ms:.1f} | {r.wake_p99_ms:.1f} | {r.rss_mib:.0f} | "
            f"{r.cpu_ms_per_request:.2f}"
        )
    notify, poll = rows
    print(
        f"notify/poll: idle commands x{notify.idle_commands_per_waiter_s / poll.idle_commands_per_waiter_s:.3f}, "  # noqa: E501
        f"wake p50 x{notify.wake_p50_ms / max(poll.wake_p50_ms, 1e-9):.2f}"
    )
    print(
        f"targets (notify): wake p50 <= 20 ms: {'yes' if notify.wake_p50_ms <= 20 else 'NO'}; "
        f"idle <= 0.2 cmd/waiter/s: {'yes' if notify.idle_commands_per_waiter_s <= 0.2 else 'NO'}"
    )


async def _main(n: int, rate: float) -> list[Figures]:
    _raise_fd_limit()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    with private_redis(keyspace_events="KEA") as server, tempfile.TemporaryDirectory() as tmp:
        # The idle window spans a whole notify-mode backstop interval (15 s).
        return [
            await _run_mode(server, Path(tmp), mode, n, rate, idle_s=16.0)
            for mode in ("notify", "poll")
        ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench coordinator_wait")
    parser.add_argument("--full", action="store_true", help="1,000 held connections")
    parser.add_argument("--waiters", type=int, default=0)
    parser.add_argument("--rate", type=float, default=100.0, help="results landing per second")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    n = args.waiters or (1000 if args.full else 300)
    rows = asyncio.run(_main(n, args.rate))
    if args.json:
        print(json.dumps([r.__dict__ for r in rows]))
    _print(rows)
    return 0
