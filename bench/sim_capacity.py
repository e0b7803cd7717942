"""Simulator capacity: concurrent SSE streams one pinned core can serve on time.

For time scales 1, 4 and 10 (profile ``h100-8b``, load factor off so the configured ITL is
fixed), find the largest number of concurrent streams whose inter-token latency p99, as seen
by the client, stays within max(10 %, 2 ms wall) of the configured ITL, and the tokens/s
streamed there. Baseline, same core, same events: a bare aiohttp handler that sleeps one ITL
and writes one event per token. The server runs in a child process pinned to one core; the
load generator runs on another core when there is one.

    python -m bench sim_capacity            # quick (<= 60 s)
    python -m bench sim_capacity --full     # finer search, longer trials
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np
import orjson

ITL = 0.012  # h100-8b inter-token latency, scaled seconds
SERVER_CORE = 0


@dataclass
class Trial:
    streams: int
    itl_p50_ms: float
    itl_p99_ms: float
    tokens_per_s: float
    ok: bool


# -- servers (child process) -----------------------------------------------------------------


def _serve(kind: str, scale: float) -> None:
    import uvloop

    _pin(SERVER_CORE)
    uvloop.run(_serve_async(kind, scale))


async def _serve_async(kind: str, scale: float) -> None:
    from aiohttp import web

    from sluiceway.clock import RealClock
    from sluiceway.sim import SimConfig, running_simulator

    if kind == "sim":
        cfg = SimConfig.from_profile(
            "h100-8b", max_num_seqs=100_000, max_waiting_queue_length=100_000,
            time_factor_under_load=1.0, num_gpu_blocks=1_000_000, max_model_len=1_000_000,
        )  # fmt: skip
        async with running_simulator(cfg, clock=RealClock(scale=scale)) as pool:
            print(pool.urls[0], flush=True)
            await asyncio.Event().wait()
    runner = web.AppRunner(_baseline_app(scale), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()


def _baseline_app(scale: float) -> object:
    """A bare SSE loop: the same chunk bytes as the simulator, one write per token."""
    from aiohttp import web

    from sluiceway.sim.openai_response import DONE_EVENT, ChunkFormat
    from sluiceway.sim.tokenizer import detokenize_one

    async def handler(request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        fmt = ChunkFormat("completion", "cmpl-x", 0, "sim-model")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await asyncio.sleep(0.030 / scale)
        n = body["max_tokens"]
        for i in range(n):
            reason = "length" if i == n - 1 else None
            await response.write(
                fmt.token_event(detokenize_one(i), first=i == 0, finish_reason=reason)
            )
            await asyncio.sleep(ITL / scale)
        await response.write(DONE_EVENT)
        return response

    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    return app


def _pin(core: int) -> None:
    if hasattr(os, "sched_setaffinity") and core < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {core})


# -- load generator (this process) ------------------------------------------------------------


class _SseProbe(asyncio.Protocol):
    """A minimal raw HTTP/1.1 client for one SSE stream: stamps every event on arrival.

    aiohttp's client costs ~100 us per event in Python; this costs a few, so the load generator
    does not become the bottleneck it is trying to measure.
    """

    def __init__(self, request: bytes, done: asyncio.Future[None]) -> None:
        self.request = request
        self.done = done
        self.gaps: list[tuple[float, float]] = []
        self.last = 0.0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        events = data.count(b"data: {")
        if events:
            if self.last:
                self.gaps.append((now, now - self.last))
                self.gaps.extend((now, 0.0) for _ in range(events - 1))
            self.last = now
        if b"[DONE]" in data and not self.done.done():
            self.done.set_result(None)
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _stream(url: str, tokens: int, delay: float) -> list[tuple[float, float]]:
    await asyncio.sleep(delay)
    host, port = url.removeprefix("http://").split(":")
    body = orjson.dumps({"model": "sim-model", "prompt": "capacity probe", "max_tokens": tokens,
                         "stream": True, "ignore_eos": True})  # fmt: skip
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()  # fmt: skip
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    _, probe = await loop.create_connection(lambda: _SseProbe(head + body, done), host, int(port))
    await done
    return probe.gaps


async def _trial(url: str, streams: int, scale: float, seconds: float) -> Trial:
    itl_wall = ITL / scale
    tokens = max(20, int(seconds / itl_wall))
    ramp = min(0.2, seconds / 5)
    start = time.perf_counter()
    results = await asyncio.gather(
        *(_stream(url, tokens, ramp * i / streams) for i in range(streams))
    )
    first_end = min(g[-1][0] for g in results if g)
    window_start = start + ramp + 5 * itl_wall
    gaps = np.array([gap for g in results for t, gap in g if window_start <= t <= first_end])
    if len(gaps) == 0 or first_end <= window_start:
        return Trial(streams, 0.0, 0.0, 0.0, False)
    p50, p99 = (float(np.percentile(gaps, q)) for q in (50, 99))
    ok = p99 <= itl_wall + max(0.1 * itl_wall, 0.002)
    return Trial(streams, p50 * 1e3, p99 * 1e3, len(gaps) / (first_end - window_start), ok)


async def _search(
    url: str, scale: float, rates: list[int], seconds: float, retry: bool
) -> tuple[Trial | None, list[Trial]]:
    """Raise the offered token rate until the server saturates (delivers < 80 % of it).

    Returns the largest trial meeting the ITL bound (None if none did) and every trial; the
    highest delivered rate among them is the saturation throughput.
    """
    best: Trial | None = None
    trials: list[Trial] = []
    for rate in rates:
        streams = max(1, round(rate * ITL / scale))
        trial = await _trial(url, streams, scale, seconds)
        if not trial.ok and retry:  # a shared machine has hiccups: one retry per level
            trials.append(trial)
            trial = await _trial(url, streams, scale, seconds)
        trials.append(trial)
        if trial.ok:
            best = trial
        if trial.tokens_per_s < 0.8 * rate:
            break
    return best, trials


def _spawn(kind: str, scale: float) -> tuple[subprocess.Popen[str], str]:
    code = f"from bench.sim_capacity import _serve; _serve({kind!r}, {scale!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _measure(
    kind: str, scale: float, rates: list[int], seconds: float, retry: bool
) -> tuple[Trial | None, list[Trial]]:
    import uvloop

    proc, url = _spawn(kind, scale)
    try:
        return uvloop.run(_search(url, scale, rates, seconds, retry))
    finally:
        proc.terminate()
        proc.wait()


def _report(scale: float, kind: str, best: Trial | None, trials: list[Trial]) -> None:
    for t in trials:
        mark = "ok " if t.ok else "MISS"
        print(
            f"  S={scale:<4g} {kind:8s} {t.streams:5d} streams  ITL p50 {t.itl_p50_ms:6.2f} ms  "
            f"p99 {t.itl_p99_ms:6.2f} ms  {t.tokens_per_s:9.0f} tok/s  {mark}"
        )
    if best is None:
        print(f"  S={scale:<4g} {kind:8s} no stream count met the ITL bound")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench sim_capacity")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--scales", default="1,4,10")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    # Offered token rates (tokens/s); streams = rate x ITL_wall.
    rates = [5_000, 10_000, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000, 60_000, 80_000]
    # Quick mode starts at the 20,000 tokens/s target; short trials are at the mercy of
    # scheduler hiccups on a shared machine, so each is 2.2 s.
    rates = rates if args.full else [20_000, 40_000, 70_000]
    seconds = 4.0 if args.full else 2.2
    print(
        f"sim_capacity: server pinned to core {SERVER_CORE}; ITL {ITL * 1e3:g} ms scaled; "
        f"bound p99 <= ITL + max(10 %, 2 ms) wall"
    )
    summary = []
    for scale in (float(s) for s in args.scales.split(",")):
        row = []
        for kind in ("sim", "baseline"):
            best, trials = _measure(kind, scale, rates, seconds, args.full)
            top = max(t.tokens_per_s for t in trials)
            _report(scale, kind, best, trials)
            row.append((best, top))
        summary.append((scale, *row))
    print(
        "\nscale | within ITL bound: sim streams, tok/s | baseline streams, tok/s | saturation "
        "tok/s: sim, baseline, ratio"
    )
    for scale, (sim, sim_top), (base, base_top) in summary:
        s_n, s_t = (sim.streams, sim.tokens_per_s) if sim else (0, 0.0)
        b_n, b_t = (base.streams, base.tokens_per_s) if base else (0, 0.0)
        print(
            f"{scale:<5g} | {s_n:6d} {s_t:9.0f} | {b_n:6d} {b_t:9.0f} | "
            f"{sim_top:9.0f} {base_top:9.0f} {sim_top / base_top:6.2f}"
        )
    return 0
