"""Lane scheduler cost: add + pop per request, beside a plain heap measured in the same run.

The processor's ready buffer (``sluiceway.processor.lane_scheduler``) does strict lanes,
round-robin across queues and earliest deadline first inside a queue. The baseline is one
``heapq`` ordered by (lane, deadline) with no round-robin, the least any lane order could cost.
Reported: microseconds per add+pop and the ratio to the baseline, for buffers of the sizes the
processor holds (about the worker count) and far beyond.

Default: short. ``--full``: more rounds and a 100,000-entry buffer.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import random
import time

from sluiceway.processor.lane_scheduler import LaneScheduler

QUEUES = [f"team-{i}" for i in range(8)]


def _items(count: int, seed: int) -> list[tuple[int, str, float]]:
    rng = random.Random(seed)
    return [(rng.randrange(6), rng.choice(QUEUES), rng.uniform(0, 3600)) for _ in range(count)]


def _scheduler_cycle(items: list[tuple[int, str, float]], resident: int) -> float:
    """Seconds for len(items) add+pop pairs with ``resident`` items kept waiting."""
    sched: LaneScheduler[int] = LaneScheduler()
    for n, (lane, queue, deadline) in enumerate(items[:resident]):
        sched.add(n, lane=lane, queue=queue, deadline=deadline)
    started = time.perf_counter()
    for n, (lane, queue, deadline) in enumerate(items):
        sched.add(n, lane=lane, queue=queue, deadline=deadline)
        sched.pop()
    return time.perf_counter() - started


def _heap_cycle(items: list[tuple[int, str, float]], resident: int) -> float:
    heap: list[tuple[int, float, int]] = []
    seq = itertools.count()
    for lane, _, deadline in items[:resident]:
        heapq.heappush(heap, (lane, deadline, next(seq)))
    started = time.perf_counter()
    for lane, _, deadline in items:
        heapq.heappush(heap, (lane, deadline, next(seq)))
        heapq.heappop(heap)
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench lanes")
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args(argv)
    operations = 400_000 if args.full else 60_000
    sizes = (16, 64, 1_000, 100_000) if args.full else (16, 64, 1_000)
    items = _items(operations, seed=7)
    print(f"{'resident':>9} {'lanes us/op':>12} {'heap us/op':>11} {'ratio':>6}")
    for resident in sizes:
        ours = min(_scheduler_cycle(items, resident) for _ in range(3)) / operations * 1e6
        base = min(_heap_cycle(items, resident) for _ in range(3)) / operations * 1e6
        print(f"{resident:>9} {ours:>12.2f} {base:>11.2f} {ours / base:>6.1f}")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
