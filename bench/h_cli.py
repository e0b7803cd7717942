"""Scenario H as a platform team runs it: every component its own ``sluiceway`` process.

A private redis-server, the simulator (``--profile guide-pool``: C = 10 slots, ~2 s per
128-token completion), the router with the coordinator mounted, and the processor, each started
with the CLI from ``deploy/examples/h-realtime-isolation/`` (temporary copies whose in-cluster
hosts name the loopback ones; every other setting as shipped): the in-process isolation
benchmark proves the settings, this that what an operator deploys behaves the same.

Stages: async only (the model's service time: the simulator's request-time histogram median),
the realtime baseline (k streams alone), then mixed (async in wait mode from ``--lead`` seconds
before realtime, so the backlog is at its steady state). Figures come from the isolation
benchmark's own functions; waste from the simulator's counters (tokens generated minus those in
answers clients received). Exit 0 when the TTFT, slack and waste goals are met, else 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from sluiceway.bench.isolation import sampler as smp
from sluiceway.bench.isolation.checks import BandSample, Judge, PoolSample, StageMeasure
from sluiceway.bench.isolation.figures import level_figures, service_time
from sluiceway.bench.isolation.load import AsyncLoad, LoadTarget, RealtimeLoad
from sluiceway.bench.isolation.plan import SERVICE_S
from sluiceway.bench.isolation.stack import served_model
from sluiceway.bench.isolation.waste import Waste
from sluiceway.clock import RealClock
from sluiceway.localservices import private_redis
from sluiceway.observability import names
from sluiceway.ports import free_port

total = smp.metric_total
SUCCESS = names.VLLM_REQUEST_SUCCESS_TOTAL
EXAMPLE = Path(__file__).resolve().parents[1] / "deploy" / "examples" / "h-realtime-isolation"
ROUTER_HOST = "http://llm-d-router-epp:80"
REDIS_HOST = "redis:6379"  # also inside redis://redis:6379
CAPACITY = 10  # the guide-pool profile's slots
SLACK_GOAL = 0.8
WASTE_GOAL_PCT = 5.0
START_TIMEOUT = 60.0  # wall seconds a process gets to announce its port
SETTLE_LIMIT = 90.0  # seconds the leftovers of a stage may take to leave the simulator


@dataclass(frozen=True)
class Plan:
    """Durations (seconds) and load of one run."""

    k: int
    rate: float
    patience: float
    realtime_s: float
    lead_s: float
    async_only_s: float
    warmup_s: float

    def realtime_requests(self) -> int:
        return max(self.k, round(self.k * self.realtime_s / SERVICE_S))


def _plan(argv: list[str]) -> tuple[Plan, Path | None]:
    parser = argparse.ArgumentParser(prog="python -m bench h_cli", description=__doc__)
    parser.add_argument("--full", action="store_true", help="90 s of realtime per stage")
    parser.add_argument("--quick", action="store_true", help="the default: about 3 minutes")
    parser.add_argument("--k", type=int, default=8, help="realtime streams (closed loop)")
    parser.add_argument("--rate", type=float, default=10.0, help="async requests per second")
    parser.add_argument("--patience", type=float, default=20.0, help="async client timeout, s")
    parser.add_argument("--realtime-seconds", type=float, help="realtime load per stage")
    parser.add_argument("--lead", type=float, default=20.0, help="async lead in the mixed stage")
    parser.add_argument("--async-only-seconds", type=float, help="service-time warm-up stage")
    parser.add_argument("--warmup", type=float, help="seconds cut from each window's start")
    parser.add_argument("--logs", type=Path, help="keep the configs and process logs here")
    a = parser.parse_args(argv)
    realtime_s = a.realtime_seconds or (90.0 if a.full else 40.0)
    async_only_s = a.async_only_seconds or (40.0 if a.full else 20.0)
    warmup_s = a.warmup if a.warmup is not None else (15.0 if a.full else 5.0)
    plan = Plan(a.k, a.rate, a.patience, realtime_s, a.lead, async_only_s, warmup_s)
    return plan, a.logs


# --- the processes ------------------------------------------------------------------------


@dataclass
class Processes:
    """The CLI processes started so far; stopped (SIGTERM, then SIGKILL) in reverse order."""

    folder: Path
    started: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> str:
        """Start ``sluiceway <args>`` and return the first URL it announces."""
        ports = self.folder / f"{name}.ports.json"
        cmd = [sys.executable, "-m", "sluiceway", *args, "--ports-file", str(ports)]
        env = {**os.environ, **(env or {})}
        with (self.folder / f"{name}.log").open("wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.started.append((name, proc))
        return self._url(name, proc, ports)

    def _url(self, name: str, proc: subprocess.Popen[bytes], ports: Path) -> str:
        end = time.monotonic() + START_TIMEOUT
        while time.monotonic() < end:
            if ports.exists() and (urls := json.loads(ports.read_text())):
                return str(next(iter(urls.values())))
            if proc.poll() is not None:
                tail = (self.folder / f"{name}.log").read_text()[-2000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")
            time.sleep(0.05)
        raise RuntimeError(f"{name} did not announce its port within {START_TIMEOUT} s")

    def stop(self) -> None:
        for _, proc in reversed(self.started):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, proc in reversed(self.started):
            try:
                proc.wait(40)
            except subprocess.TimeoutExpired:
                print(f"{name} ignored SIGTERM for 40 s: killed", file=sys.stderr)
                proc.kill()
                proc.wait(10)


def _local_copy(name: str, folder: Path, router_url: str, redis_port: int) -> Path:
    """The example file with its in-cluster hosts replaced by the loopback ones."""
    text = (EXAMPLE / name).read_text()
    text = text.replace(ROUTER_HOST, router_url).replace(REDIS_HOST, f"127.0.0.1:{redis_port}")
    out = folder / name
    out.write_text(text)
    return out


@dataclass(frozen=True)
class System:
    sim: str
    router: str
    model: str


@contextlib.contextmanager
def running_system(folder: Path) -> Iterator[System]:
    """Redis, simulator, router (+ coordinator), processor; all stopped on exit."""
    procs = Processes(folder)
    with private_redis() as redis:
        try:
            sim = procs.start("sim", ["sim", "--profile", "guide-pool", "--port", "0"])
            port = free_port()  # the coordinator's gateway address must name it up front
            router_url = f"http://127.0.0.1:{port}"
            files = {
                n: _local_copy(n, folder, router_url, redis.port)
                for n in ("router-values.yaml", "coordinator.yaml", "processor-values.yaml")
            }
            procs.start("router", [
                "router", "--config", str(files["router-values.yaml"]),
                "--coordinator-config", str(files["coordinator.yaml"]),
                "--objectives", str(EXAMPLE / "objectives.yaml"),
                "--endpoints", sim, "--port", str(port),
            ])  # fmt: skip
            procs.start(
                "processor",
                ["processor", "--config", str(files["processor-values.yaml"]), "--port", "0"],
                env={"REDIS_URL": redis.url},
            )
            yield System(sim, router_url, asyncio.run(served_model(sim)))
        finally:
            procs.stop()


@dataclass
class Watch:
    """Samples the simulator and the router every quarter second (as the isolation sampler)."""

    system: System
    http: aiohttp.ClientSession
    clock: RealClock
    realtime_in_flight: Callable[[], int]
    pool: list[PoolSample] = field(default_factory=list)
    bands: list[BandSample] = field(default_factory=list)
    sim_lag: float = 0.0  # the simulator's worst event-loop lag seen (wall seconds)

    async def run(self) -> None:
        while True:
            sim, router = await asyncio.gather(
                smp.scrape_metrics(self.http, self.system.sim),
                smp.scrape_metrics(self.http, self.system.router),
            )
            now = self.clock.now()
            if sim is not None:
                self.sim_lag = max(self.sim_lag, total(sim, names.SIM_EVENT_LOOP_LAG))
                running, waiting = round(total(sim, smp.RUNNING)), round(total(sim, smp.WAITING))
                self.pool.append(PoolSample(now, running, waiting, self.realtime_in_flight()))
            if router is not None:
                self.bands.append(BandSample(now, smp.band_counts(router)))
            await asyncio.sleep(0.25)


@dataclass(frozen=True)
class Counters:  # the simulator's, at one instant
    generated: float
    aborted: float
    request_time: dict[float, float]


async def _counters(http: aiohttp.ClientSession, sim: str) -> Counters:
    registry = await smp.scrape_metrics(http, sim)
    if registry is None:
        raise RuntimeError(f"the simulator at {sim} did not answer /metrics")
    success = (s for m in registry.collect() for s in m.samples if s.name == SUCCESS)
    aborted = sum(s.value for s in success if s.labels.get("finished_reason") == "abort")
    buckets = {float(le): count for le, count in smp.request_time_buckets(registry)}
    return Counters(total(registry, names.VLLM_GENERATION_TOKENS_TOTAL), aborted, buckets)


@dataclass
class Run:
    system: System
    plan: Plan
    http: aiohttp.ClientSession
    clock: RealClock = field(default_factory=lambda: RealClock(1.0))
    aborts: dict[str, float] = field(default_factory=dict)
    # per stage: loop lag p99 here, worst in the simulator (ms): is the machine too busy?
    lags: dict[str, tuple[float | None, float]] = field(default_factory=dict)

    def target(self) -> LoadTarget:
        return LoadTarget(self.system.router, self.system.model, 128)

    async def stage(self, tag: str, *, realtime: bool, with_async: bool) -> StageMeasure:
        """One stage, then wait until the simulator is idle; its counters span both."""
        before = await _counters(self.http, self.system.sim)
        rt = RealtimeLoad(self.target(), self.clock, self.http, tag)
        batch = AsyncLoad(self.target(), self.clock, self.http, tag, self.plan.patience)
        watch = Watch(self.system, self.http, self.clock, lambda: rt.in_flight)
        lag = smp.LoopLag()
        load = self._load(rt, batch, realtime=realtime, with_async=with_async)
        await _while(asyncio.gather(watch.run(), lag.run()), load)
        self.lags[tag] = (lag.p99(), 1000 * watch.sim_lag)
        await self._settle()
        after = await _counters(self.http, self.system.sim)
        delivered = sum(r.tokens for r in (*rt.records, *batch.records) if r.ok)
        generated = round(after.generated - before.generated)
        self.aborts[tag] = after.aborted - before.aborted
        waste = Waste(generated=generated, undelivered=max(0, generated - delivered))
        service = smp.histogram_median(before.request_time, after.request_time)
        return StageMeasure(
            rt.records, batch.records, watch.pool, watch.bands, [], waste, service
        )  # fmt: skip

    async def _load(
        self, rt: RealtimeLoad, batch: AsyncLoad, *, realtime: bool, with_async: bool
    ) -> None:
        stop = asyncio.Event()
        sending = asyncio.create_task(batch.run(self.plan.rate, stop)) if with_async else None
        try:
            if not realtime:
                await asyncio.sleep(self.plan.async_only_s)
                return
            if sending is not None:
                await asyncio.sleep(self.plan.lead_s)
            await rt.run(self.plan.k, self.plan.realtime_requests())
        finally:
            stop.set()
            if sending is not None:
                await sending

    async def _settle(self) -> None:
        """Until the simulator has been idle for 2 s (the processor's leftovers gone)."""
        end, idle_since = time.monotonic() + SETTLE_LIMIT, time.monotonic()
        while time.monotonic() < end and time.monotonic() - idle_since < 2.0:
            sim = await smp.scrape_metrics(self.http, self.system.sim)
            if sim is None or total(sim, smp.RUNNING) or total(sim, smp.WAITING):
                idle_since = time.monotonic()
            await asyncio.sleep(0.25)


async def _while(background: Awaitable[object], work: Awaitable[None]) -> None:
    """Run ``work`` with ``background`` beside it, cancelled once ``work`` ends."""
    task = asyncio.ensure_future(background)
    try:
        await work
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _measure(system: System, plan: Plan) -> tuple[Figures, Run]:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        run = Run(system, plan, http)
        print(f"async only ({plan.async_only_s:.0f} s: the model's service time)", flush=True)
        alone = await run.stage("ao", realtime=False, with_async=True)
        service = service_time(alone)  # no per-attempt view: the histogram median
        print(f"baseline (k = {plan.k} realtime streams alone)", flush=True)
        baseline = await run.stage("b", realtime=True, with_async=False)
        print(f"mixed (async {plan.lead_s:.0f} s ahead, then realtime)", flush=True)
        mixed = await run.stage("m", realtime=True, with_async=True)
    judge = Judge(CAPACITY, env={"AMT_WARMUP_S": str(plan.warmup_s)})
    return level_figures(round(100 * plan.k / CAPACITY), baseline, mixed, judge, service), run


# --- report -------------------------------------------------------------------------------

Figures = dict[str, float | None]
FATES = {"delivered": "delivered", "abandoned_queued": "abandoned (client gave up)",
         "deadline": "504 deadline/infeasible", "dropped": "429/503", "error": "error"}  # fmt: skip


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _goals(f: Figures) -> dict[str, bool]:
    ratio, waste = f["goodput_slack_ratio"], f["wasted_tokens_pct"]
    return {
        "ttft": f["ttft_p90_goal_met"] == 1.0,
        "slack": ratio is not None and ratio >= SLACK_GOAL,
        "waste": waste is not None and waste <= WASTE_GOAL_PCT,
    }


def _lines(f: Figures, run: Run, goals: dict[str, bool]) -> list[str]:
    ok = {True: "met", False: "NOT met"}
    ratio = None if f["goodput_slack_ratio"] is None else 100 * f["goodput_slack_ratio"]
    (b_lag, b_sim), (m_lag, m_sim) = run.lags["b"], run.lags["m"]
    return [
        f"{'figure':34} {'baseline':>9} {'mixed':>9}  goal",
        f"{'realtime TTFT p50 (s)':34} {_fmt(f['baseline_ttft_p50_s']):>9} "
        f"{_fmt(f['mixed_ttft_p50_s']):>9}",
        f"{'realtime TTFT p90 (s)':34} {_fmt(f['baseline_ttft_p90_s']):>9} "
        f"{_fmt(f['mixed_ttft_p90_s']):>9}  <= {_fmt(f['ttft_p90_goal_s'])} "
        f"(1.2 x + 0.05 s): {ok[goals['ttft']]}; ratio {_fmt(f['ttft_p90_ratio'], 2)}",
        f"{'realtime E2E p90 (s)':34} {_fmt(f['baseline_e2e_p90_s']):>9} "
        f"{_fmt(f['mixed_e2e_p90_s']):>9}",
        f"{'loop lag p99 bench / sim max (ms)':34} {_fmt(b_lag, 1):>4}/{b_sim:<4.0f} "
        f"{_fmt(m_lag, 1):>4}/{m_sim:<4.0f}  (load average {os.getloadavg()[0]:.1f})",
        "",
        f"steady window {_fmt(f['window_s'], 1)} s; mean realtime in flight "
        f"{_fmt(f['mean_realtime_running'], 2)} of C = {CAPACITY}",
        f"model service time (simulator request-time median, async only) "
        f"{_fmt(f['service_time_s'])} s; client E2E median {_fmt(f['service_time_queued_s'])} s",
        f"async goodput {_fmt(f['async_goodput_per_s'])}/s vs slack "
        f"{_fmt(f['slack_completions_per_s'])}/s = {_fmt(ratio, 1)} % "
        f"(goal >= {SLACK_GOAL:.0%}): {ok[goals['slack']]}",
        f"waste {_fmt(f['wasted_tokens'], 0)} of {_fmt(f['generated_tokens'], 0)} generated "
        f"tokens reached no client = {_fmt(f['wasted_tokens_pct'], 2)} % "
        f"(goal <= {WASTE_GOAL_PCT:g} %): {ok[goals['waste']]}",
        f"async fates, mixed stage ({_fmt(f['fate_arrivals'], 0)} arrivals): "
        + ", ".join(f"{label} {_fmt(f['fate_' + key], 0)}" for key, label in FATES.items())
        + f"; simulator aborts (evictions + cancels) {run.aborts['m']:.0f}",
    ]


def _run(plan: Plan, logs: Path | None) -> tuple[Figures, Run]:
    with contextlib.ExitStack() as stack:
        folder = logs or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="h-cli-")))
        folder.mkdir(parents=True, exist_ok=True)
        with running_system(folder) as system:
            print(f"router {system.router}, simulator {system.sim}; logs in {folder}")
            return asyncio.run(_measure(system, plan))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    plan, logs = _plan(argv)
    # not asyncio.run's SIGINT handler: the cancellation it sends can be swallowed
    old = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        figures, run = _run(plan, logs)
    except KeyboardInterrupt:
        print("interrupted: every process stopped", file=sys.stderr)
        return 130
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    goals = _goals(figures)
    print("\n" + "\n".join(_lines(figures, run, goals)), flush=True)
    return 0 if all(goals.values()) else 1
