"""Router overhead against a minimal aiohttp streaming proxy, both in front of the simulator.

Set-up: the simulator's default latencies (TTFT 20 ms, ITL 10 ms) with 128-token streams at
time scale 1 (``max_num_seqs`` raised so the simulator never queues); the router with flow
control on and a concurrency detector whose ``maxConcurrency`` is above the offered load; the
router or the proxy pinned to core 0, the simulator and this load generator on core 1.
Interleaved runs (direct, proxy, router, ...), medians over runs:

* added TTFT at a fixed 20 req/s: p50 and p99 over direct (target p50 <= 1 ms);
* CPU microseconds per streamed request of the router and of the proxy, from /proc at that
  rate (target router <= 2x proxy);
* maximum streamed requests/s through each, closed loop (target router >= 0.5x proxy).

    python -m bench router_overhead                 # 5 runs x 3 s per measurement
    python -m bench router_overhead --runs 3 --seconds 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import numpy as np

RATE = 20.0
TOKENS = 128
PROXY_CORE, LOAD_CORE = 0, 1
CONFIG = """apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: concurrency-detector
  parameters: {maxConcurrency: 100000}
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


def _pin(core: int) -> list[str]:
    if shutil.which("taskset") and (os.cpu_count() or 1) > core:
        return ["taskset", "-c", str(core)]
    return []


def _start(args: list[str], name: str, core: int | None) -> tuple[subprocess.Popen[str], str]:
    prefix = _pin(core) if core is not None else []
    proc = subprocess.Popen([*prefix, sys.executable, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{name} exited before listening")
        parts = line.split()
        if parts[:2] == ["listening", name] or (parts[:1] == ["listening"] and name in parts[1]):
            return proc, parts[2]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _one(session: aiohttp.ClientSession, url: str) -> float | None:
    start = time.perf_counter()
    async with session.post(url + "/v1/completions", json=PAYLOAD) as r:
        ttft = None
        async for _ in r.content.iter_any():
            if ttft is None:
                ttft = time.perf_counter() - start
        return ttft if r.status == 200 else None


async def _paced(url: str, seconds: float) -> list[float]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        tasks = []
        start = time.perf_counter()
        for i in range(int(RATE * seconds)):
            delay = start + i / RATE - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(_one(s, url)))
        return [t for t in await asyncio.gather(*tasks) if t is not None]


async def _closed_loop(url: str, seconds: float, clients: int) -> float:
    done = 0
    end = time.perf_counter() + seconds

    async def client(s: aiohttp.ClientSession) -> None:
        nonlocal done
        while time.perf_counter() < end:
            if await _one(s, url) is not None:
                done += 1

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        start = time.perf_counter()
        await asyncio.gather(*(client(s) for _ in range(clients)))
        return done / (time.perf_counter() - start)


@dataclass
class Target:
    name: str
    url: str
    pid: int | None
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)
    rps: list[float] = field(default_factory=list)


def _paced_run(target: Target, seconds: float) -> None:
    cpu0 = _cpu_seconds(target.pid) if target.pid else 0.0
    ttfts = asyncio.run(_paced(target.url, seconds))
    if target.pid:
        target.cpu_us.append((_cpu_seconds(target.pid) - cpu0) / max(1, len(ttfts)) * 1e6)
    target.p50.append(float(np.percentile(ttfts, 50)) * 1e3)
    target.p99.append(float(np.percentile(ttfts, 99)) * 1e3)


def _median(xs: list[float]) -> float:
    return float(np.median(xs)) if xs else float("nan")


def _report(targets: list[Target]) -> None:
    direct, proxy, router = targets
    print(f"{'':8} {'TTFT p50 ms':>12} {'TTFT p99 ms':>12} {'CPU us/req':>11} {'max req/s':>10}")
    for t in targets:
        cpu = f"{_median(t.cpu_us):11.0f}" if t.cpu_us else f"{'-':>11}"
        rps = f"{_median(t.rps):10.1f}" if t.rps else f"{'-':>10}"
        print(f"{t.name:8} {_median(t.p50):12.2f} {_median(t.p99):12.2f} {cpu} {rps}")
    for t in (proxy, router):
        print(
            f"added TTFT over direct, {t.name}: p50 {_median(t.p50) - _median(direct.p50):+.2f} "
            f"ms, p99 {_median(t.p99) - _median(direct.p99):+.2f} ms"
        )
    print(
        f"router CPU / proxy CPU per request: {_median(router.cpu_us) / _median(proxy.cpu_us):.2f}"
        " (target <= 2)"
    )
    if router.rps and proxy.rps:
        print(
            f"router req/s / proxy req/s: {_median(router.rps) / _median(proxy.rps):.2f}"
            " (target >= 0.5)"
        )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench router_overhead")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", type=int, default=64, help="closed-loop streams at once")
    ap.add_argument("--skip-throughput", action="store_true")
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > LOAD_CORE:
        os.sched_setaffinity(0, {LOAD_CORE})
    procs: list[subprocess.Popen[str]] = []
    try:
        sim, sim_url = _start(
            [
                "-m",
                "sluiceway",
                "sim",
                "--port",
                "0",
                "--max-num-seqs",
                "4096",
                "--num-gpu-blocks",
                "100000",
                "--max-model-len",
                "4096",
            ],
            "sim-0",
            LOAD_CORE,
        )
        procs.append(sim)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(CONFIG)
        router, router_url = _start(
            [
                "-m",
                "sluiceway",
                "router",
                "--config",
                f.name,
                "--endpoints",
                sim_url,
                "--port",
                "0",
                "--log-level",
                "warning",
            ],
            "router",
            PROXY_CORE,
        )
        procs.append(router)
        proxy, proxy_url = _start(["-m", "bench._min_proxy", sim_url], "proxy", PROXY_CORE)
        procs.append(proxy)
        targets = [
            Target("direct", sim_url, None),
            Target("proxy", proxy_url, proxy.pid),
            Target("router", router_url, router.pid),
        ]
        for t in targets:  # warm up connections and code paths
            asyncio.run(_paced(t.url, 0.5))
        for _ in range(args.runs):
            for t in targets:
                _paced_run(t, args.seconds)
            if not args.skip_throughput:
                for t in targets[1:]:
                    t.rps.append(asyncio.run(_closed_loop(t.url, args.seconds, args.clients)))
        _report(targets)
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
