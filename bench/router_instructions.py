"""The router's instructions per streamed request, operator signals on against off.

Counted as ``bench._callgrind`` counts (``bench processor_instructions`` does the same for the
processor): the router process runs under callgrind, once on ``--small`` and once on
``--large`` streamed requests (128 tokens, the simulator in another process, the load from
this one, 4 at a time), after the same warm-up; the difference over the request difference is
what one more streamed request costs, start-up and warm-up cancelled out. Background work is
turned down so it does not grow with the run's length (no load scraping, health checks once
a minute, models read once).

* ``off``: ``--access-log-sample 0``, no ``OTEL_*`` (the HTTP metrics, always on, remain);
* ``on``: every request in the access log (JSON, to a file), every request traced, spans
  exported over OTLP/HTTP to a loopback sink that discards (``bench/_discard_sink.py``);
* ``log only``: the access log as ``on``, no tracing;
* ``on, 10 % traced``: as ``on``, the trace-id ratio sampler at 0.1.

Target: ``on`` at most 1.15x ``off``. ``--baseline REV`` adds the router of a git revision
(a temporary worktree, run with ``off``'s flags less ``--access-log-sample``): what the
always-on part costs. The method's own spread is about 10 % (how the simulator's tokens
coalesce into reads changes the relay's work): ``--rounds N`` measures every column N times,
round after round, and prints each round and the median. Needs ``valgrind``; a few minutes
per column and round.

    python -m bench router_instructions
    python -m bench router_instructions --small 20 --large 100 --baseline d210b14
    python -m bench router_instructions --columns on --rounds 3   # off and on, three times
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp

from bench._callgrind import ROOT, callgrind, collected, have_valgrind, per_request, worktree
from bench.router_overhead import CONFIG, PAYLOAD, _start, traced_env

QUIET = ["--metrics-scrape-interval", "0", "--health-interval", "60s", "--models-interval", "0"]
WARM_UP = 10
# --columns names -> the printed names
COLUMNS = {"off": "off", "on": "on", "log": "log only", "tenth": "on, 10 % traced"}
AT_ONCE = 4


async def _streams(url: str, n: int) -> None:
    """``n`` streamed requests, ``AT_ONCE`` at a time, each read to its end."""
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(s: aiohttp.ClientSession) -> None:
        async with gate, s.post(url + "/v1/completions", json=PAYLOAD) as r:
            await r.read()
            if r.status != 200:
                raise RuntimeError(f"the router answered {r.status}")

    async with aiohttp.ClientSession() as s:
        await asyncio.gather(*(one(s) for _ in range(n)))


def _run(tree: Path, args: list[str], env: dict[str, str], n: int) -> int:
    """Instructions of one router process that served the warm-up and ``n`` requests."""
    env = dict(env, PYTHONPATH=f"{tree / 'src'}{os.pathsep}{tree}", PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "stderr", "w") as err:
        summary = Path(tmp) / "callgrind.log"
        proc, url = _start(
            args, "router", None, env=env, stderr=err, wrapper=callgrind([], log_file=str(summary))
        )
        try:
            asyncio.run(_streams(url, WARM_UP))
            if n:
                asyncio.run(_streams(url, n))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(600)
        found = collected(summary.read_text())
    if found is None:
        raise RuntimeError(f"callgrind did not finish ({tree}, {args})")
    return found


def _column(tree: Path, args: list[str], env: dict[str, str], small: int, large: int) -> float:
    a, b = _run(tree, args, env, small), _run(tree, args, env, large)
    return per_request((small, a), (large, b))


def _router(config: str, sim_url: str, *extra: str) -> list[str]:
    return ["-m", "sluiceway", "router", "--config", config, "--endpoints", sim_url,
            "--port", "0", "--log-level", "warning", "--log-format", "json",
            *QUIET, *extra]  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench router_instructions")
    parser.add_argument("--small", type=int, default=20)
    parser.add_argument("--large", type=int, default=100)
    parser.add_argument("--baseline", help="a git revision to measure beside (signals off)")
    parser.add_argument(
        "--columns", default=",".join(COLUMNS), help=f"of {','.join(COLUMNS)} (off always)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="every column again, after all")
    args = parser.parse_args(argv)
    if not have_valgrind():
        print("valgrind not found (Debian package valgrind): nothing measured")
        return 0
    procs: list[subprocess.Popen[str]] = []
    columns: dict[str, list[float]] = {}
    try:
        sim, sim_url = _start(
            ["-m", "sluiceway", "sim", "--port", "0", "--max-num-seqs", "4096",
             "--num-gpu-blocks", "100000", "--time-to-first-token", "1ms",
             "--inter-token-latency", "1ms"],
            "sim-0",
            None,
        )  # fmt: skip
        procs.append(sim)
        sink, sink_url = _start(["-m", "bench._discard_sink"], "sink", None)
        procs.append(sink)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(CONFIG)
        plain = dict(os.environ)
        for key in [k for k in plain if k.startswith("OTEL_")]:
            del plain[key]
        off = _router(f.name, sim_url, "--access-log-sample", "0")
        on = _router(f.name, sim_url, "--access-log-sample", "1")
        tenth = dict(
            traced_env(sink_url),
            OTEL_TRACES_SAMPLER="traceidratio",
            OTEL_TRACES_SAMPLER_ARG="0.1",
        )
        runs = {"off": (off, plain), "on": (on, traced_env(sink_url)), "log": (on, plain)}
        runs["tenth"] = (on, tenth)
        names = ["off", *(c for c in args.columns.split(",") if c in runs and c != "off")]
        for _ in range(args.rounds):  # rounds, not repeats in a row: a drift hits every column
            for name in names:
                flags, env = runs[name]
                value = _column(ROOT, flags, env, args.small, args.large)
                columns.setdefault(COLUMNS[name], []).append(value)
            if args.baseline:
                with worktree(args.baseline) as tree:
                    before = _router(f.name, sim_url)
                    value = _column(tree, before, plain, args.small, args.large)
                    columns.setdefault(args.baseline, []).append(value)
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
    print(f"\nmillion instructions per streamed request ({args.large} - {args.small} requests,"
          f" {PAYLOAD['max_tokens']} tokens each), by round (x off in the round)")  # fmt: skip
    off = columns["off"]
    for name, values in columns.items():
        each = "  ".join(f"{v / 1e6:7.3f} ({v / o:.3f}x)" for v, o in zip(values, off, strict=True))
        print(f"{name:18}{each}   median {statistics.median(values) / statistics.median(off):.3f}x")
    print("target: on <= 1.15x off")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
