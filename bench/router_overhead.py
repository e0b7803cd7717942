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

The router runs twice, side by side: with its operator signals off (``--access-log-sample
0``, no ``OTEL_*``: the HTTP metrics, always on, remain) and on (``router+obs``: every request
in the access log, written to a file, and traced at 100 %, exported over OTLP/HTTP to a
loopback sink that discards, ``bench/_discard_sink.py``); target: router+obs's TTFT p50 within
2 ms of the proxy's. ``bench router_instructions`` counts the same difference in instructions.

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
from typing import IO

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


def _start(
    args: list[str],
    name: str,
    core: int | None,
    *,
    env: dict[str, str] | None = None,
    stderr: IO[str] | None = None,
    wrapper: list[str] | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """``python ARGS`` (under ``wrapper``, pinned to ``core``) once it says it listens as
    ``name``; its URL."""
    prefix = [*(_pin(core) if core is not None else []), *(wrapper or [])]
    proc = subprocess.Popen(
        [*prefix, sys.executable, *args], stdout=subprocess.PIPE, text=True, env=env, stderr=stderr
    )
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{name} exited before listening")
        parts = line.split()
        if parts[:2] == ["listening", name] or (parts[:1] == ["listening"] and name in parts[1]):
            return proc, parts[2]


def router_args(config: str, sim_url: str, sample: float) -> list[str]:
    """``sluiceway router`` in front of ``sim_url``, its access log sampled at ``sample``."""
    return [
        "-m", "sluiceway", "router", "--config", config, "--endpoints", sim_url,
        "--port", "0", "--log-level", "warning", "--access-log-sample", str(sample),
    ]  # fmt: skip


def traced_env(sink_url: str) -> dict[str, str]:
    """Every request traced, exported over OTLP/HTTP to ``sink_url``."""
    return dict(
        os.environ,
        OTEL_EXPORTER_OTLP_ENDPOINT=sink_url,
        OTEL_TRACES_SAMPLER="always_on",
        OTEL_SERVICE_NAME="bench-router",
    )


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
    direct, proxy, router, observed = targets
    print(f"{'':10} {'TTFT p50 ms':>12} {'TTFT p99 ms':>12} {'CPU us/req':>11} {'max req/s':>10}")
    for t in targets:
        cpu = f"{_median(t.cpu_us):11.0f}" if t.cpu_us else f"{'-':>11}"
        rps = f"{_median(t.rps):10.1f}" if t.rps else f"{'-':>10}"
        print(f"{t.name:10} {_median(t.p50):12.2f} {_median(t.p99):12.2f} {cpu} {rps}")
    for t in (proxy, router, observed):
        print(
            f"added TTFT over direct, {t.name}: p50 {_median(t.p50) - _median(direct.p50):+.2f} "
            f"ms, p99 {_median(t.p99) - _median(direct.p99):+.2f} ms"
        )
    print(
        f"router CPU / proxy CPU per request: {_median(router.cpu_us) / _median(proxy.cpu_us):.2f}"
        " (target <= 2)"
    )
    print(
        f"router+obs over router: TTFT p50 {_median(observed.p50) - _median(router.p50):+.2f} ms,"
        f" p99 {_median(observed.p99) - _median(router.p99):+.2f} ms; CPU per request "
        f"{_median(observed.cpu_us) / _median(router.cpu_us):.2f}x"
    )
    print(
        f"router+obs TTFT p50 over the proxy: {_median(observed.p50) - _median(proxy.p50):+.2f} ms"
        " (target <= +2)"
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
    access_log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed in the finally below
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
        sink, sink_url = _start(["-m", "bench._discard_sink"], "sink", LOAD_CORE)
        procs.append(sink)
        router, router_url = _start(router_args(f.name, sim_url, 0.0), "router", PROXY_CORE)
        procs.append(router)
        observed, observed_url = _start(
            router_args(f.name, sim_url, 1.0),
            "router",
            PROXY_CORE,
            env=traced_env(sink_url),
            stderr=access_log,
        )
        procs.append(observed)
        proxy, proxy_url = _start(["-m", "bench._min_proxy", sim_url], "proxy", PROXY_CORE)
        procs.append(proxy)
        targets = [
            Target("direct", sim_url, None),
            Target("proxy", proxy_url, proxy.pid),
            Target("router", router_url, router.pid),
            Target("router+obs", observed_url, observed.pid),
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
        access_log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
