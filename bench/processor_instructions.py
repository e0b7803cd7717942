"""The processor's CPU above the durable floor, counted in instructions.

Counted as ``bench._callgrind`` counts: instructions, which other jobs do not change, per
request from a small and a large run. The processor (``bench processor_throughput``'s e2e
part: Redis, a zero-latency upstream in another process) and the floor (the least a durable
consumer of this design does) each run twice under callgrind, on ``--small`` and on
``--large`` requests after the same warm-up. What the processor adds above the floor is the
figure to watch.

``--baseline REV`` measures a git revision the same way, side by side (a temporary worktree;
its own ``bench/processor_throughput.py`` drives its processor). Needs ``valgrind``; about
ten minutes per tree at the default sizes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from bench._callgrind import callgrind, collected, have_valgrind, per_request, worktree
from bench.processor_throughput import zero_upstream
from sluiceway.localservices import private_redis

ROOT = Path(__file__).resolve().parent.parent
CHILD = Path(__file__).resolve().parent / "_instructions_child.py"
MODES = ("processor", "floor")


def _instructions(tree: Path, mode: str, n: int, url: str, upstream: str, workers: int) -> int:
    env = dict(os.environ, PYTHONPATH=f"{tree / 'src'}{os.pathsep}{tree}")
    command = callgrind([sys.executable, str(CHILD), mode, url, upstream, str(n), str(workers)])
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True)
    found = collected(done.stderr)
    if done.returncode or found is None:
        raise RuntimeError(f"callgrind run failed ({tree}, {mode}):\n{done.stderr[-2000:]}")
    return found


def _measure(tree: Path, small: int, large: int, workers: int) -> dict[str, float]:
    """Instructions per request of each mode, and the processor's above the floor."""
    out: dict[str, float] = {}
    with private_redis(keyspace_events="KEA") as server, zero_upstream() as upstream:
        for mode in MODES:
            a = _instructions(tree, mode, small, server.url, upstream, workers)
            b = _instructions(tree, mode, large, server.url, upstream, workers)
            out[mode] = per_request((small, a), (large, b))
    out["above the floor"] = out["processor"] - out["floor"]
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench processor_instructions")
    parser.add_argument("--baseline", help="a git revision to measure side by side")
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--large", type=int, default=1100)
    parser.add_argument("--workers", type=int, default=32)
    args = parser.parse_args(argv)
    if not have_valgrind():
        print("valgrind not found (Debian package valgrind): nothing measured")
        return 0
    columns = {"this tree": _measure(ROOT, args.small, args.large, args.workers)}
    if args.baseline:
        with worktree(args.baseline) as tree:
            columns[args.baseline] = _measure(tree, args.small, args.large, args.workers)
    names = list(columns)
    print(f"\nmillion instructions per request ({args.large} - {args.small} requests, "
          f"{args.workers} workers, zero-latency upstream, Redis)")  # fmt: skip
    print(
        f"{'':18}"
        + "".join(f"{name:>14}" for name in names)
        + ("   ratio" if args.baseline else "")
    )
    for key in (*MODES, "above the floor"):
        row = [columns[name][key] / 1e6 for name in names]
        ratio = f"{row[0] / row[1]:8.2f}" if args.baseline else ""
        print(f"{key:18}" + "".join(f"{v:14.3f}" for v in row) + ratio)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
