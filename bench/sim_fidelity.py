"""Simulator fidelity: measured TTFT / ITL / E2E against the configured latency model.

Profile ``guide-pool`` at time scale 1 (10 slots, ITL 10 ms, TTFT 50 ms, factor 1.5 when
full; a 128-token completion ~2 s with all slots busy). Two loads: one request at a time, and
a closed loop keeping max-num-seqs requests in flight. Client-side figures over real loopback
HTTP, each beside the configured value; pass when every p50 is within 10 %.

    python -m bench sim_fidelity            # quick (<= 60 s)
    python -m bench sim_fidelity --full     # more requests per load
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass, field

import aiohttp
import numpy as np

from sluiceway.clock import RealClock
from sluiceway.sim import SimConfig, running_simulator

TOKENS = 128


@dataclass
class Samples:
    ttft: list[float] = field(default_factory=list)
    itl: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)


async def _one(session: aiohttp.ClientSession, url: str, samples: Samples) -> None:
    body = {"model": "sim-model", "prompt": "fidelity", "max_tokens": TOKENS, "stream": True}
    start = time.perf_counter()
    last = 0.0
    async with session.post(url + "/v1/completions", json=body) as resp:
        async for line in resp.content:
            if not line.startswith(b"data: {"):
                continue
            now = time.perf_counter()
            if last:
                samples.itl.append(now - last)
            else:
                samples.ttft.append(now - start)
            last = now
    samples.e2e.append(time.perf_counter() - start)


async def _closed_loop(url: str, workers: int, seconds: float, stagger: float) -> Samples:
    samples = Samples()
    deadline = time.perf_counter() + seconds

    async def worker(index: int, session: aiohttp.ClientSession) -> None:
        await asyncio.sleep(stagger * index / workers)
        while time.perf_counter() < deadline:
            await _one(session, url, samples)

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(worker(i, session) for i in range(workers)))
    return samples


def _expected(cfg: SimConfig, running: int) -> dict[str, float]:
    factor = 1 + (cfg.time_factor_under_load - 1) * (running - 1) / (cfg.max_num_seqs - 1)
    ttft = cfg.time_to_first_token * factor
    itl = cfg.inter_token_latency * factor
    return {"ttft": ttft, "itl": itl, "e2e": ttft + (TOKENS - 1) * itl}


def _report(label: str, samples: Samples, expected: dict[str, float]) -> bool:
    ok = True
    print(f"\n{label}: {len(samples.e2e)} requests")
    print("  metric  configured   p50 (ratio)          p99 (ratio)")
    for name in ("ttft", "itl", "e2e"):
        values = np.array(getattr(samples, name))
        p50, p99 = (float(np.percentile(values, q)) for q in (50, 99))
        want = expected[name]
        within = abs(p50 / want - 1) <= 0.10
        ok &= within
        print(
            f"  {name:6s} {want * 1e3:9.1f} ms {p50 * 1e3:8.1f} ms ({p50 / want:4.2f})  "
            f"{p99 * 1e3:8.1f} ms ({p99 / want:4.2f})  {'ok' if within else 'OFF BY > 10 %'}"
        )
    return ok


async def _run(full: bool) -> bool:
    cfg = SimConfig.from_profile("guide-pool")
    single_seconds, busy_seconds = (20.0, 60.0) if full else (8.0, 16.0)
    async with running_simulator(cfg, clock=RealClock()) as pool:
        url = pool.urls[0]
        single = await _closed_loop(url, 1, single_seconds, 0.0)
        busy = await _closed_loop(url, cfg.max_num_seqs, busy_seconds, 2.0)
    ok = _report("1 running", single, _expected(cfg, 1))
    ok &= _report(f"{cfg.max_num_seqs} running", busy, _expected(cfg, cfg.max_num_seqs))
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench sim_fidelity")
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args(argv)
    print("sim_fidelity: profile guide-pool, time scale 1, 128-token streamed completions")
    ok = asyncio.run(_run(args.full))
    print("\nresult:", "every p50 within 10 % of configured" if ok else "FIDELITY MISS")
    return 0 if ok else 1
