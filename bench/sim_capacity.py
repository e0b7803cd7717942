"""Simulator capacity: concurrent 128-token SSE streams one pinned core serves on time.

Profile ``default`` (TTFT 20 ms, ITL 10 ms, no load factor) with the slot and KV limits lifted,
so only the process itself can fall behind. Closed-loop clients keep N streams of 128 tokens
in flight (a new request as each ends). The capacity at fidelity is the largest offered rate
whose inter-token latency p99, as seen by the client, stays within max(10 %, 2 ms wall) of the
configured ITL; the bench prints the tokens/s streamed there, TTFT p99, and the saturation
rate. Baseline, same core, same bytes: a bare aiohttp handler that sleeps one ITL and writes
one event per token. The server runs in a child process pinned to core 0; the load generator
on core 1 when there is one.

    python -m bench sim_capacity                 # quick: time scale 1, 3 s per rate
    python -m bench sim_capacity --full          # finer search, longer trials, scales 1,4,10
    python -m bench sim_capacity --src DIR       # serve the simulator from another source tree
                                                 # (a baseline commit, for before/after ratios)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import orjson

ITL = 0.010  # default profile inter-token latency, scaled seconds
TTFT = 0.020  # default profile time to first token, scaled seconds
TOKENS = 128
SERVER_CORE = 0


@dataclass
class Trial:
    streams: int
    offered: float
    itl_p50_ms: float
    itl_p99_ms: float
    ttft_p99_ms: float
    tokens_per_s: float
    ok: bool
    loop_lag_ms: float | None = None  # the server's own event-loop lag gauge, max while loaded
    late_p99_ms: float | None = None  # the server's token lateness p99 (bucket bound)


# -- servers (child process) -----------------------------------------------------------------


def _serve(kind: str, scale: float) -> None:
    import uvloop

    _pin(SERVER_CORE)
    uvloop.run(_serve_async(kind, scale))


async def _serve_async(kind: str, scale: float) -> None:
    from aiohttp import web

    from sluiceway.clock import RealClock
    from sluiceway.sim import SimConfig

    if kind == "sim":  # the simulator as ``sluiceway sim`` runs it (one process, uvloop)
        try:
            from sluiceway.sim.serve_forever import serve_forever
        except ImportError:  # a source tree from before the module was renamed
            from sluiceway.sim.serve import serve_forever  # type: ignore[no-redef]
        cfg = SimConfig.from_profile(
            "default", max_num_seqs=100_000, max_waiting_queue_length=100_000,
            num_gpu_blocks=1_000_000, max_model_len=1_000_000,
        )  # fmt: skip
        await serve_forever(cfg, 1, RealClock(scale=scale), "127.0.0.1", 0, None)
    runner = web.AppRunner(_baseline_app(scale), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()


def _baseline_app(scale: float) -> object:
    """A bare SSE loop: the same chunk bytes as the simulator, one write per token."""
    from aiohttp import web

    try:
        from sluiceway.sim.openai_response import DONE_EVENT, ChunkFormat
    except ImportError:  # a source tree from before the module was renamed
        from sluiceway.sim.protocol import DONE_EVENT, ChunkFormat  # type: ignore[no-redef]
    from sluiceway.sim.tokenizer import detokenize_one

    async def handler(request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        fmt = ChunkFormat("completion", "cmpl-x", 0, "sim-model")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await asyncio.sleep(TTFT / scale)
        n = body["max_tokens"]
        for i in range(n):
            reason = "length" if i == n - 1 else None
            await response.write(
                fmt.token_event(detokenize_one(i), first=i == 0, finish_reason=reason)
            )
            if i < n - 1:
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
        self.start = time.perf_counter()
        self.ttft = 0.0
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
            else:
                self.ttft = now - self.start
            self.gaps.extend((now, 0.0) for _ in range(events - 1))
            self.last = now
        if b"[DONE]" in data and not self.done.done():
            self.done.set_result(None)
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


@dataclass
class _Samples:
    gaps: list[tuple[float, float]] = field(default_factory=list)
    ttfts: list[tuple[float, float]] = field(default_factory=list)


async def _stream(url: str, samples: _Samples) -> None:
    host, port = url.removeprefix("http://").split(":")
    body = orjson.dumps({"model": "sim-model", "prompt": "capacity probe", "max_tokens": TOKENS,
                         "stream": True, "ignore_eos": True})  # fmt: skip
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()  # fmt: skip
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    _, probe = await loop.create_connection(lambda: _SseProbe(head + body, done), host, int(port))
    await done
    samples.gaps.extend(probe.gaps)
    if probe.ttft:
        samples.ttfts.append((probe.start, probe.ttft))


async def _worker(url: str, delay: float, deadline: float, samples: _Samples) -> None:
    await asyncio.sleep(delay)
    while time.perf_counter() < deadline:
        await _stream(url, samples)


async def _trial(url: str, rate: float, scale: float, seconds: float) -> Trial:
    """Closed loop: enough streams in flight to offer ``rate`` tokens/s, for ``seconds``."""
    itl_wall = ITL / scale
    stream_wall = (TTFT + (TOKENS - 1) * ITL) / scale
    streams = max(1, round(rate * stream_wall / TOKENS))
    ramp = min(stream_wall, seconds / 3)
    start = time.perf_counter()
    deadline = start + seconds
    samples = _Samples()
    lag = asyncio.create_task(_max_loop_lag(url, start + ramp, deadline))
    await asyncio.gather(
        *(_worker(url, ramp * i / streams, deadline, samples) for i in range(streams))
    )
    loop_lag, late_p99 = await lag
    window = (start + ramp + 5 * itl_wall, deadline)
    gaps = np.array([gap for t, gap in samples.gaps if window[0] <= t <= window[1]])
    ttfts = np.array([v for t, v in samples.ttfts if window[0] <= t <= window[1]] or [0.0])
    if len(gaps) == 0:
        return Trial(streams, rate, 0.0, 0.0, 0.0, 0.0, False)
    p50, p99 = (float(np.percentile(gaps, q)) for q in (50, 99))
    ok = p99 <= itl_wall + max(0.1 * itl_wall, 0.002)
    delivered = len(gaps) / (window[1] - window[0])
    ttft_p99 = float(np.percentile(ttfts, 99))
    return Trial(
        streams, rate, p50 * 1e3, p99 * 1e3, ttft_p99 * 1e3, delivered, ok, loop_lag, late_p99
    )


async def _max_loop_lag(url: str, start: float, end: float) -> tuple[float | None, float | None]:
    """The server's own view of the window, or None where it does not export it (the control,
    an older tree): whether a miss is the server running late or the rest of the machine.

    Returns the largest ``sluiceway_sim_event_loop_lag_seconds`` scraped every 0.5 s (ms) and
    the p99 of ``sluiceway_sim_token_lateness_seconds`` over the window (its bucket bound, ms).
    """
    import aiohttp

    worst: float | None = None
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    await asyncio.sleep(max(0.0, start - time.perf_counter()))
    async with aiohttp.ClientSession() as http:
        while time.perf_counter() < end:
            async with http.get(url + "/metrics") as resp:
                text = await resp.text() if resp.status == 200 else ""
            for line in text.splitlines():
                if line.startswith("sluiceway_sim_event_loop_lag_seconds "):
                    value = float(line.split()[1]) * 1e3
                    worst = value if worst is None else max(worst, value)
            last = _lateness_buckets(text)
            first = first or last
            await asyncio.sleep(0.5)
    return worst, _p99_bound(first, last)


def _lateness_buckets(text: str) -> dict[str, float]:
    prefix = "sluiceway_sim_token_lateness_seconds_bucket{"
    out = {}
    for line in text.splitlines():
        if line.startswith(prefix):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            out[le] = float(line.rsplit(" ", 1)[1])
    return out


def _p99_bound(first: dict[str, float], last: dict[str, float]) -> float | None:
    """The smallest bucket bound (ms) under which 99 % of the window's tokens fell."""
    if not last:
        return None
    deltas = sorted(((float(le), last[le] - first.get(le, 0.0)) for le in last), key=lambda b: b[0])
    total = deltas[-1][1]
    for bound, count in deltas:
        if total and count >= 0.99 * total:
            return bound * 1e3
    return None


async def _search(
    url: str, scale: float, rates: list[int], seconds: float, retry: bool
) -> tuple[Trial | None, list[Trial]]:
    """Raise the offered token rate until the server saturates (delivers < 80 % of it).

    Every rate is tried even after a miss, so that two source trees can be compared rate by
    rate on a noisy machine. Returns the largest trial meeting the bound (None if none did)
    and every trial; the highest delivered rate among them is the saturation throughput.
    """
    best: Trial | None = None
    trials: list[Trial] = []
    for rate in rates:
        trial = await _trial(url, rate * scale, scale, seconds)
        if not trial.ok and retry:  # a shared machine has hiccups: one retry per level
            trials.append(trial)
            trial = await _trial(url, rate * scale, scale, seconds)
        trials.append(trial)
        if trial.ok:
            best = trial
        if trial.tokens_per_s < 0.8 * rate * scale:
            break
    return best, trials


def _timer_floor(seconds: float = 2.0) -> tuple[float, float]:
    """p50 and p99 lateness (ms) of a bare 10 ms timer loop on the server's core: the machine's
    own noise, which no server on that core can beat."""
    code = (
        "import asyncio, os, time, uvloop\n"
        f"os.sched_setaffinity(0, {{{SERVER_CORE}}}) if hasattr(os, 'sched_setaffinity') else 0\n"
        "async def main():\n"
        "    late, t = [], time.perf_counter()\n"
        f"    for _ in range({int(seconds / 0.01)}):\n"
        "        t += 0.01\n"
        "        await asyncio.sleep(max(0.0, t - time.perf_counter()))\n"
        "        late.append(time.perf_counter() - t)\n"
        "    print(' '.join(str(x) for x in late))\n"
        "uvloop.run(main())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    late = np.array([float(x) for x in out.stdout.split()]) * 1e3
    return float(np.percentile(late, 50)), float(np.percentile(late, 99))


def _spawn(kind: str, scale: float, src: str | None) -> tuple[subprocess.Popen[str], str]:
    code = f"from bench.sim_capacity import _serve; _serve({kind!r}, {scale!r})"
    env = dict(os.environ)
    if src:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join([src, here])
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()[-1]  # "listening sim-0 <url>" or "<url>"


def _measure(
    kind: str, scale: float, rates: list[int], seconds: float, src: str | None, retry: bool
) -> tuple[Trial | None, list[Trial]]:
    import uvloop

    proc, url = _spawn(kind, scale, src)
    try:
        return uvloop.run(_search(url, scale, rates, seconds, retry))
    finally:
        proc.terminate()
        proc.wait()


def _report(scale: float, kind: str, best: Trial | None, trials: list[Trial]) -> None:
    for t in trials:
        mark = "ok " if t.ok else "MISS"
        print(
            f"  S={scale:<4g} {kind:8s} {t.streams:5d} streams ({t.offered:6.0f} offered)  "
            f"ITL p50 {t.itl_p50_ms:6.2f} p99 {t.itl_p99_ms:6.2f} ms  TTFT p99 "
            f"{t.ttft_p99_ms:7.2f} ms  {t.tokens_per_s:7.0f} tok/s  server: loop lag "
            f"{_ms(t.loop_lag_ms)}, token lateness p99 <= {_ms(t.late_p99_ms)}  {mark}",
            flush=True,
        )
    if best is None:
        print(f"  S={scale:<4g} {kind:8s} no offered rate met the ITL bound")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:g} ms"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench sim_capacity")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--scales", default=None, help="comma list (quick: 1; full: 1,4,10)")
    parser.add_argument("--kinds", default="sim,baseline", help="sim, baseline or both")
    parser.add_argument("--src", default=None, help="serve the simulator from this src dir")
    parser.add_argument("--rates", default=None, help="offered tokens/s per scale unit")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    rates = [5_000, 10_000, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000, 60_000]
    if args.rates:
        rates = [int(r) for r in args.rates.split(",")]
    seconds = 5.0 if args.full else 3.0
    scales = args.scales or ("1,4,10" if args.full else "1")
    print(
        f"sim_capacity: server pinned to core {SERVER_CORE}; {TOKENS}-token streams, TTFT "
        f"{TTFT * 1e3:g} ms, ITL {ITL * 1e3:g} ms scaled; bound ITL p99 <= ITL + max(10 %, 2 ms) "
        f"wall; src {args.src or 'this tree'}"
    )
    floor = _timer_floor()
    print(f"timer noise floor on core {SERVER_CORE}: a bare 10 ms timer loop is late by p50 "
          f"{floor[0]:.2f} ms, p99 {floor[1]:.2f} ms")  # fmt: skip
    summary = []
    for scale in (float(s) for s in scales.split(",")):
        for kind in args.kinds.split(","):
            best, trials = _measure(kind, scale, rates, seconds, args.src, args.full)
            _report(scale, kind, best, trials)
            top = max(t.tokens_per_s for t in trials)
            summary.append((scale, kind, best, top))
    print("\nscale kind      at fidelity: streams  tok/s | saturation tok/s")
    for scale, kind, best, top in summary:
        n, tps = (best.streams, best.tokens_per_s) if best else (0, 0.0)
        print(f"{scale:<5g} {kind:9s} {n:20d} {tps:6.0f} | {top:9.0f}")
    return 0
