"""Flow-control throughput: the synchronous core, the adapter's enqueue/wait path, backlog drain.

Grid (as upstream's ``BenchmarkFlowController_PerformanceMatrix``): bands P in {1, 8} x flows
F in {10, 5000} x waiting W in {10, 5000}, each cell for global-strict, round-robin and
token-fair. Flow choice is Zipf-like (a hot tenant), bands uniform.

* core: W requests stay queued; each step adds one request, runs one cycle against a pool
  with one free slot, and finishes the dispatched request. Dispatches/s on one core.
* adapter: W asyncio tasks loop ``enqueue``, cycle, ``wait``, ``finished``, cycle (as the
  router does); the pool has one slot (the hardest case: every dispatch needs a completion
  first). Dispatches/s.
* drain: 5,000 callers wait in ``FlowAdapter.wait`` on a saturated pool; capacity is released
  at once; time until every caller has returned (the Go original ticks once per ms: ~1,000/s).
* fairness: two always-backlogged tenants, one sending 10x the tokens per request, on a
  4-slot pool in virtual time: the largest gap in served tokens over any interval (VTC's bound:
  2U) and Jain's index of the served tokens, per fairness policy.

Baseline measured in the same run: a bare ``heapq`` push/pop loop over W items; figures are
also printed as ratios to it. Default: a representative subset, short. ``--full``: every cell.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from sluiceway.clock import RealClock
from sluiceway.flowcontrol import (
    BandSettings,
    CapacityView,
    FlowController,
    FlowControlSettings,
    Request,
)
from sluiceway.flowcontrol.adapter import FlowAdapter
from sluiceway.flowcontrol.base import FairnessPolicy
from sluiceway.flowcontrol.fairness import GlobalStrict, RoundRobin, TokenFair

POLICIES: dict[str, Callable[[], FairnessPolicy]] = {
    "global-strict": GlobalStrict,
    "round-robin": RoundRobin,
    "token-fair": TokenFair,
}
QUICK_CELLS = [(1, 10, 10), (8, 5000, 5000)]
FULL_CELLS = list(itertools.product((1, 8), (10, 5000), (10, 5000)))
ONE_SLOT = CapacityView(0.0, request_cost=1.0)


@dataclass(frozen=True)
class Cell:
    bands: int
    flows: int
    waiting: int
    policy: str

    @property
    def label(self) -> str:
        return f"P={self.bands} F={self.flows} W={self.waiting} {self.policy}"


def make_controller(cell: Cell) -> FlowController:
    policy = POLICIES[cell.policy]()
    bands = tuple(
        BandSettings(p, max_requests=10**7, max_bytes=10**12, fairness=policy)
        for p in range(cell.bands)
    )
    return FlowController(FlowControlSettings(bands=bands, default_ttl=0.0))


def make_requests(cell: Cell, n: int, seed: int = 1) -> list[Request]:
    """``n`` requests: Zipf-like flow choice, uniform band, 100 B - 9 KB bodies."""
    rng = random.Random(seed)
    weights = list(itertools.accumulate(1.0 / (k + 1) for k in range(cell.flows)))
    flows = rng.choices(range(cell.flows), cum_weights=weights, k=n)
    return [
        Request(
            f"r{i}",
            f"tenant-{flows[i]}",
            rng.randrange(cell.bands),
            rng.randrange(100, 9000),
            prompt_tokens=rng.randrange(10, 500),
            max_tokens=rng.randrange(10, 500),
        )
        for i in range(n)
    ]


def heapq_rate(waiting: int, steps: int) -> float:
    """Baseline: push one, pop one, on a heap holding ``waiting`` items."""
    heap = [(float(i), i) for i in range(waiting)]
    heapq.heapify(heap)
    start = time.perf_counter()
    for i in range(steps):
        heapq.heappush(heap, (float(waiting + i), i))
        heapq.heappop(heap)
    return steps / (time.perf_counter() - start)


def core_rate(cell: Cell, steps: int) -> float:
    fc = make_controller(cell)
    reqs = make_requests(cell, cell.waiting + steps)
    for i in range(cell.waiting):
        fc.add(reqs[i], 0.0)
    add, cycle, finish = fc.add, fc.next_dispatches, fc.on_finished
    done = 0
    start = time.perf_counter()
    for i in range(cell.waiting, cell.waiting + steps):
        now = i * 1e-5  # ~100,000 dispatches per second of clock
        add(reqs[i], now)
        for d in cycle(now, ONE_SLOT).dispatched:
            finish(d.request_id, now)
            done += 1
    elapsed = time.perf_counter() - start
    assert done == steps, (done, steps)
    return done / elapsed


async def adapter_rate(cell: Cell, steps: int) -> float:
    fc = make_controller(cell)
    reqs = make_requests(cell, steps + cell.waiting)
    adapter = FlowAdapter(fc, RealClock())
    feed = iter(reqs)
    done = 0

    def kick() -> None:  # what the router does on each event: a cycle on its capacity view
        adapter.cycle(CapacityView(fc.totals.inflight, request_cost=1))

    async def worker() -> None:
        nonlocal done
        for req in feed:
            outcome = adapter.enqueue(req)
            kick()
            await adapter.wait(req.request_id, outcome)
            done += 1
            adapter.finished(req.request_id)
            kick()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(cell.waiting)))
    elapsed = time.perf_counter() - start
    return done / elapsed


async def drain_rate(waiting: int, policy: str) -> float:
    cell = Cell(8, 5000, waiting, policy)
    fc = make_controller(cell)
    adapter = FlowAdapter(fc, RealClock())
    reqs = make_requests(cell, waiting)
    tasks = [asyncio.ensure_future(adapter.wait(r.request_id, adapter.enqueue(r))) for r in reqs]
    adapter.cycle(CapacityView(1.0))  # saturated: nothing goes
    for _ in range(3):  # each caller runs up to its wait in one step
        await asyncio.sleep(0)
    assert adapter.waiting == waiting
    start = time.perf_counter()
    adapter.cycle(CapacityView(0.0))
    await asyncio.gather(*tasks)
    return waiting / (time.perf_counter() - start)


def fairness_figures(policy: str, dispatches: int = 4000) -> tuple[float, float, float]:
    """(largest served-token gap over any interval, 2U, Jain's index) for two tenants."""
    fair = TokenFair()
    fc = make_controller(Cell(1, 2, 0, policy))
    tokens = {"light": 30, "heavy": 300}
    served = dict.fromkeys(tokens, 0.0)
    gaps, ends, ids = [0.0], [(0.0, "")], itertools.count()
    while len(gaps) <= dispatches:
        now, rid = heapq.heappop(ends)
        if rid:
            fc.on_finished(rid, now)
        for tenant, n in tokens.items():
            while fc.band(0).flows.get(tenant) is None or fc.band(0).flows[tenant].queued < 40:
                fc.add(Request(f"{tenant}{next(ids)}", tenant, max_tokens=n), now)
        view = CapacityView(fc.totals.inflight / 4, request_cost=0.25)
        for d in fc.next_dispatches(now, view).dispatched:
            served[d.fairness_id] += fair.charge_of(0, tokens[d.fairness_id])
            gaps.append(served["light"] - served["heavy"])
            heapq.heappush(ends, (now + tokens[d.fairness_id] / 100, d.request_id))
    total = sum(served.values())
    jain = total**2 / (2 * sum(v * v for v in served.values()))
    return max(gaps) - min(gaps), 2 * fair.charge_of(0, tokens["heavy"]), jain


def run_grid(cells: list[tuple[int, int, int]], steps: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for bands, flows, waiting in cells:
        base = heapq_rate(waiting, steps * 4)
        for policy in POLICIES:
            cell = Cell(bands, flows, waiting, policy)
            core = core_rate(cell, steps)
            shell = asyncio.run(adapter_rate(cell, steps))
            rows.append({"cell": cell.label, "heapq": base, "core": core, "adapter": shell})
            print(
                f"{cell.label:<36} core {core:>9,.0f}/s ({core / base:5.3f} x heapq)"
                f"   enqueue+wait {shell:>8,.0f}/s ({shell / base:5.3f} x heapq)"
                f"   heapq {base:>10,.0f}/s",
                flush=True,
            )
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench flowcontrol", description=__doc__)
    parser.add_argument("--full", action="store_true", help="every cell, more steps")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    cells, steps = (FULL_CELLS, 50_000) if args.full else (QUICK_CELLS, 20_000)
    print(
        f"flow control: {steps:,} dispatches per cell (targets: core >= 50,000/s, "
        "enqueue+wait >= 15,000/s, drain >= 20,000/s)"
    )
    rows = run_grid(cells, steps)
    drains = {}
    for policy in POLICIES:
        drains[policy] = asyncio.run(drain_rate(5000, policy))
        print(
            f"drain 5,000 waiting, capacity freed at once, {policy:<14} "
            f"{drains[policy]:>9,.0f}/s (Go original: ~1,000/s, one per 1 ms tick)"
        )
    for policy in POLICIES:
        gap, bound, jain = fairness_figures(policy)
        print(
            f"fairness, 10x token skew, {policy:<14} max gap {gap:>9,.0f} tokens "
            f"(2U = {bound:,.0f})   Jain {jain:.4f}"
        )
    worst_core = min(float(r["core"]) for r in rows)  # type: ignore[arg-type]
    worst_shell = min(float(r["adapter"]) for r in rows)  # type: ignore[arg-type]
    print(
        f"worst cell: core {worst_core:,.0f}/s, enqueue+wait {worst_shell:,.0f}/s; "
        f"worst drain {min(drains.values()):,.0f}/s"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"grid": rows, "drain": drains}, fh, indent=2)
    ok = worst_core >= 50_000 and worst_shell >= 15_000 and min(drains.values()) >= 20_000
    print("targets met" if ok else "TARGETS MISSED")
    return 0
