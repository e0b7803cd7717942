"""Scenario C: does the pool gate hold the model servers busy, or pulse?

The guide's Scenario C parks the processor's pool while the router runs SAT_CAP requests: the
gate reads the router's saturation (``wait-on-refuse`` over ``endpoint-scrape``, refreshed
every ``--signal-period`` scaled seconds, 5 like the guide's Prometheus cache). A stale signal
opens the whole pool, sees it full, closes it, sees it empty: the model idles while a backlog
waits. The ``aimd`` gate holds an in-flight window moved by the router's answers instead.

Per variant (the guide's SAT_CAP 4 with 16 workers, and SAT_CAP 3 with 12), a backlog of wait-
mode requests goes through the demo's stack (simulator, router with flow control, coordinator,
processor), and every 100 ms of scaled time a sample records the requests running on the model
server and the requests not yet answered. The figure: the share of samples, from the first
start to the last answer, with nothing running while something waits (target <= 5 %), and the
window's length (target >= 30 s). The ``wait-on-refuse`` gate is the baseline, measured in the
same run.

    python -m bench scenario_c                  # both variants, both gates, 120 requests each
    python -m bench scenario_c --requests 200 --time-scale 2
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sluiceway.clock import RealClock
from sluiceway.demo.stack import StackSpec, router_document, running_demo_stack
from sluiceway.demo.steps_gates import wait_on_refuse_gate
from sluiceway.demo.traffic import Client

Gate = Callable[[str], tuple[str, Mapping[str, object]]]
IDLE_TARGET = 0.05
WINDOW_TARGET_S = 30.0


def aimd_gate(router_url: str) -> tuple[str, Mapping[str, object]]:
    return "aimd", {}


@dataclass
class Figures:
    samples: int = 0
    idle: int = 0
    seconds: float = 0.0
    answered: int = 0
    max_running: int = 0

    @property
    def idle_share(self) -> float:
        return self.idle / self.samples if self.samples else 0.0


async def _run(
    cap: int, workers: int, gate: Gate, requests: int, scale: float, period: float
) -> Figures:
    clock = RealClock(scale=scale)
    spec = StackSpec(
        router=router_document("router-evictable.yaml", maxConcurrency=cap),
        workers=workers,
        pool_gate=gate,
        signal_period=period,
    )
    figures = Figures()
    async with running_demo_stack(spec, clock=clock) as stack:
        client = Client(stack.url, clock)
        try:
            asks = [("batch" if i % 2 else "premium", f"c-{i:04d}") for i in range(requests)]
            queued = await asyncio.gather(*(client.enqueue(t, i, max_tokens=64) for t, i in asks))
            assert set(queued) == {202}, queued
            waits = [asyncio.ensure_future(client.wait(t, i, max_tokens=64)) for t, i in asks]
            await stack.start_processor()
            started: float | None = None
            while not all(w.done() for w in waits):
                running = sum(e.num_running for e in stack.sim.engines)
                waiting = sum(not w.done() for w in waits) - running
                if started is None and running:
                    started = clock.now()
                if started is not None:
                    figures.samples += 1
                    figures.idle += int(running == 0 and waiting > 0)
                    figures.max_running = max(figures.max_running, running)
                await clock.sleep(0.1)
            figures.seconds = clock.now() - (started or clock.now())
            figures.answered = sum(w.result()[0] == 200 for w in waits)
        finally:
            await client.aclose()
    return figures


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench scenario_c")
    ap.add_argument("--requests", type=int, default=120)
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--signal-period", type=float, default=5.0, help="scaled seconds")
    ap.add_argument("--gate", choices=["wait-on-refuse", "aimd"], help="only this gate")
    ap.add_argument("--cap", type=int, choices=[3, 4], help="only this variant")
    args = ap.parse_args(argv)
    gates: dict[str, Gate] = {"wait-on-refuse": wait_on_refuse_gate, "aimd": aimd_gate}
    gates = {k: v for k, v in gates.items() if args.gate in (None, k)}
    variants = (("guide: SAT_CAP 4, 16 workers", 4, 16), ("SAT_CAP 3, 12 workers", 3, 12))
    variants = tuple(v for v in variants if args.cap in (None, v[1]))
    ok = True
    print(f"{'variant':<30}{'gate':<16}{'idle share':>11}{'window s':>10}{'max run':>9}{'200s':>6}")
    for name, cap, workers in variants:
        for gate_name, gate in gates.items():
            f = asyncio.run(
                _run(cap, workers, gate, args.requests, args.time_scale, args.signal_period)
            )
            print(
                f"{name:<30}{gate_name:<16}{f.idle_share:>10.1%}{f.seconds:>10.1f}"
                f"{f.max_running:>9}{f.answered:>6}"
            )
            if gate_name == "aimd":
                ok &= f.idle_share <= IDLE_TARGET and f.seconds >= WINDOW_TARGET_S
    print(f"targets (aimd): idle share <= {IDLE_TARGET:.0%} over >= {WINDOW_TARGET_S:.0f} s")
    print("TARGETS MET" if ok else "TARGETS MISSED")
    return 0 if ok else 1
