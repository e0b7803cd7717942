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

With ``--processors 1,2,3`` each row is run by that many processors on the same queues, each
in its pools' replica set on a private Redis (in one process here, each with its own signal hub
and aimd windows, as separate processes would have): the pool-wide in-flight target is split by
live membership, so the mean and peak running should not grow with the processors.

    python -m bench scenario_c                  # both variants, both gates, 120 requests each
    python -m bench scenario_c --requests 200 --time-scale 2
    python -m bench scenario_c --cap 4 --processors 1,2,3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sluiceway.broker.redis_connect import connect_redis
from sluiceway.clock import RealClock
from sluiceway.demo.stack import DemoStack, StackSpec, router_document, running_demo_stack
from sluiceway.demo.steps_gates import wait_on_refuse_gate
from sluiceway.demo.traffic import Client
from sluiceway.gates.aimd import WINDOWS_SERVICE, SharedWindows
from sluiceway.gates.context import SIGNALS_SERVICE
from sluiceway.ledger.membership import ReplicaMembership
from sluiceway.processor.service import Processor
from sluiceway.signals.refresher import SignalHub
from sluiceway.signals.settings import PrometheusSettings

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
    in_flight_sum: int = 0
    max_in_flight: int = 0

    @property
    def mean_in_flight(self) -> float:
        return self.in_flight_sum / self.samples if self.samples else 0.0

    @property
    def idle_share(self) -> float:
        return self.idle / self.samples if self.samples else 0.0


@contextlib.asynccontextmanager
async def _processors(
    stack: DemoStack, count: int, redis_url: str | None, period: float, alone: bool
) -> AsyncIterator[list[Processor]]:
    """The stack's own processor (``count`` 0), or ``count`` processors on its queues,
    each a member of the pools' replica sets on ``redis_url`` (``alone``: none is, the
    baseline where each keeps its own target)."""
    if count == 0 or redis_url is None:
        await stack.start_processor()
        yield [stack.processor]
        return
    redis: Any = connect_redis(redis_url, max_connections=4)
    procs, hubs = [], []
    try:
        for n in range(count):
            hub = SignalHub(stack.clock, PrometheusSettings(cache_ttl=period))
            hubs.append(hub)
            member = None if alone else ReplicaMembership(redis, stack.clock, member=f"p{n}")
            procs.append(
                Processor(
                    stack.processor.settings,
                    stack.broker,
                    clock=stack.clock,
                    quota_store=stack.quota,
                    services={SIGNALS_SERVICE: hub, WINDOWS_SERVICE: SharedWindows()},
                    membership=member,
                )
            )
        for proc in procs:
            await proc.start()
        for proc in procs:  # each sees all the others before the backlog flows
            if proc.membership is not None:
                await proc.membership.sync_once()
        yield procs
    finally:
        for proc in procs:
            await proc.stop()
        for hub in hubs:
            await hub.aclose()
        await redis.aclose()


async def _run(
    cap: int,
    workers: int,
    gate: Gate,
    requests: int,
    scale: float,
    period: float,
    processors: int = 1,
    redis_url: str | None = None,
    alone: bool = False,
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
            async with _processors(stack, processors, redis_url, period, alone) as procs:
                await _sample(waits, stack, procs, figures)
            figures.answered = sum(w.result()[0] == 200 for w in waits)
        finally:
            await client.aclose()
    return figures


async def _sample(
    waits: list[Any], stack: DemoStack, procs: list[Processor], figures: Figures
) -> None:
    """Every 100 ms of scaled time until every wait is answered: the model server's running
    requests, and the processors' in flight (dispatched, not yet answered) all together."""
    clock = stack.clock
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
            in_flight = sum(pool.dispatching for p in procs for pool in p.pools.values())
            figures.in_flight_sum += in_flight
            figures.max_in_flight = max(figures.max_in_flight, in_flight)
        await clock.sleep(0.1)
    figures.seconds = clock.now() - (started or clock.now())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench scenario_c")
    ap.add_argument("--requests", type=int, default=120)
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--signal-period", type=float, default=5.0, help="scaled seconds")
    ap.add_argument("--gate", choices=["wait-on-refuse", "aimd"], help="only this gate")
    ap.add_argument("--cap", type=int, choices=[3, 4], help="only this variant")
    ap.add_argument(
        "--processors", help="comma-separated counts, e.g. 1,2,3: processors in replica sets"
    )
    ap.add_argument("--alone", action="store_true", help="processors without membership")
    args = ap.parse_args(argv)
    gates: dict[str, Gate] = {"wait-on-refuse": wait_on_refuse_gate, "aimd": aimd_gate}
    gates = {k: v for k, v in gates.items() if args.gate in (None, k)}
    variants = (("guide: SAT_CAP 4, 16 workers", 4, 16), ("SAT_CAP 3, 12 workers", 3, 12))
    variants = tuple(v for v in variants if args.cap in (None, v[1]))
    counts = [int(n) for n in args.processors.split(",")] if args.processors else [0]
    with contextlib.ExitStack() as services:
        redis_url = None
        if args.processors:
            from sluiceway.localservices import private_redis

            redis_url = services.enter_context(private_redis()).url
        ok = _table(args, variants, gates, counts, redis_url)
    print(f"targets (aimd): idle share <= {IDLE_TARGET:.0%} over >= {WINDOW_TARGET_S:.0f} s")
    print("TARGETS MET" if ok else "TARGETS MISSED")
    return 0 if ok else 1


def _table(
    args: argparse.Namespace,
    variants: tuple[tuple[str, int, int], ...],
    gates: Mapping[str, Gate],
    counts: list[int],
    redis_url: str | None,
) -> bool:
    """One row per variant, gate and processor count (0: the stack's own processor)."""
    ok = True
    print(
        f"{'variant':<30}{'gate':<16}{'procs':>6}{'idle share':>11}{'window s':>10}"
        f"{'max run':>9}{'mean in flight':>16}{'max in flight':>15}{'200s':>6}"
    )
    for name, cap, workers in variants:
        for gate_name, gate in gates.items():
            for count in counts:
                run = _run(
                    cap, workers, gate, args.requests, args.time_scale, args.signal_period,
                    processors=count, redis_url=redis_url, alone=args.alone,
                )  # fmt: skip
                f = asyncio.run(run)
                print(
                    f"{name:<30}{gate_name:<16}{max(1, count):>6}{f.idle_share:>10.1%}"
                    f"{f.seconds:>10.1f}{f.max_running:>9}{f.mean_in_flight:>16.2f}"
                    f"{f.max_in_flight:>15}{f.answered:>6}"
                )
                if gate_name == "aimd":
                    ok &= f.idle_share <= IDLE_TARGET and f.seconds >= WINDOW_TARGET_S
    return ok
