"""Run the isolation test: per mode, start the system, run the async-only stage, then per level
the baseline and mixed stages, and judge them.

:func:`run_isolation` is the Python entry point (the demo runs a one-level step through it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from sluiceway.bench.isolation.checks import (
    LAG_CHECK,
    Judge,
    StageMeasure,
    ValidatorCheck,
    async_only_checks,
    band_checks,
    level_checks,
)
from sluiceway.bench.isolation.figures import (
    async_only_figures,
    baseline_100,
    level_figures,
    realtime_rps,
    service_time,
)
from sluiceway.bench.isolation.load import AsyncLoad, LoadTarget, RealtimeLoad
from sluiceway.bench.isolation.modes import ModeSpec, mode_spec
from sluiceway.bench.isolation.plan import IsolationOptions, StagePlan, realtime_concurrency
from sluiceway.bench.isolation.result import IsolationReport, ModeResult
from sluiceway.bench.isolation.sampler import (
    AttemptLog,
    LoopLag,
    PoolWatch,
    histogram_median,
    scrape_request_time,
)
from sluiceway.bench.isolation.stack import Stack, running_stack
from sluiceway.bench.isolation.tolerances import tolerance
from sluiceway.bench.isolation.waste import wasted_tokens
from sluiceway.clock import Clock, RealClock

__all__ = ["lag_bound_ms", "lag_check", "run_isolation", "run_isolation_async", "too_busy"]

log = logging.getLogger(__name__)
# Scaled seconds: the processor aborts a dispatched request whose client left within its
# cancellation check interval (0.5 s), so a request it had already sent may still reach a model
# server that long after; anything later was dispatched after the client gave up.
ABANDON_GRACE = 1.0
SETTLE_LIMIT = 60.0  # scaled seconds a stage's leftovers may take to drain
Progress = Callable[[str], None]


def run_isolation(
    options: IsolationOptions,
    progress: Progress | None = None,
    after_mode: Callable[[IsolationReport], object] | None = None,
) -> IsolationReport:
    """Run every mode of ``options`` (blocking) and return the report (not yet written);
    ``after_mode`` sees the report so far after each mode (to save a long run as it goes)."""
    return asyncio.run(run_isolation_async(options, progress, after_mode))


async def run_isolation_async(
    options: IsolationOptions,
    progress: Progress | None = None,
    after_mode: Callable[[IsolationReport], object] | None = None,
) -> IsolationReport:
    """:func:`run_isolation` inside a running event loop."""
    say = progress or (lambda _: None)
    plan = options.plan()
    clock = RealClock(options.time_scale)
    report = IsolationReport(run=_run_info(options, plan))
    for name in options.modes:
        say(f"mode {name}: starting")
        started = time.monotonic()
        report.modes[name] = await _run_mode(
            mode_spec(name, options.capacity), options, plan, clock, say
        )
        say(f"mode {name}: done in {time.monotonic() - started:.0f} s")
        if after_mode is not None:
            after_mode(report)
    _negative_control(report)
    return report


def _run_info(options: IsolationOptions, plan: StagePlan) -> dict[str, object]:
    return {
        "capacity": options.capacity,
        "time_scale": options.time_scale,
        "quick": options.quick,
        "levels": list(plan.levels),
        "realtime_seconds": plan.realtime_seconds,
        "async_rate": plan.async_rate,
        "async_timeout_s": plan.async_timeout,
        "async_only_seconds": plan.async_only_seconds,
        "warmup_s": plan.warmup,
        "async_lead_s": plan.async_lead,
        "capacity_allowance": "C + CAPACITY_SLACK admitted (running + waiting): one request "
        "for an evicted request's abort that still holds its slot when its evictor arrives",
        "model_servers": list(options.endpoints) or "simulator guide-pool",
        **(options.topology.describe() if options.topology.replicated else {}),
    }


def _negative_control(report: IsolationReport) -> None:
    """Unprotected work must break realtime TTFT; if it does not, the test proves nothing."""
    none = report.modes.get("none")
    if none is None:
        return
    ttft = [c for c in none.checks if " ttft " in c.name]
    if ttft and not all(c.passed for c in ttft):
        return
    reason = "the no-protection mode passed its TTFT checks"
    for result in report.modes.values():
        result.valid = False
        result.invalid_reason = result.invalid_reason or reason
    report.run["invalid_reason"] = reason


@dataclass
class _ModeRun:
    stack: Stack
    plan: StagePlan
    clock: Clock
    session: aiohttp.ClientSession
    attempts: AttemptLog
    lag: LoopLag
    abandoned: dict[str, float]

    def target(self) -> LoadTarget:
        return LoadTarget(
            self.stack.url, self.stack.model, self.plan.output_tokens, replicas=self.stack.replicas
        )

    async def stage(
        self, tag: str, k: int, *, with_async: bool, seconds: float = 0.0
    ) -> StageMeasure:
        """One stage: realtime k workers (k > 0), async open loop (``with_async``)."""
        started = self.clock.now()
        before = None
        if k == 0 and not self.stack.engines:
            before = await scrape_request_time(self.session, self.stack.endpoints)
        rt = RealtimeLoad(self.target(), self.clock, self.session, tag)
        batch = AsyncLoad(self.target(), self.clock, self.session, tag, self.plan.async_timeout)
        watch = PoolWatch(
            self.clock,
            self.stack.engines,
            self.stack.endpoints,
            self.stack.registry,
            lambda: rt.in_flight,
            routers=self.stack.replicas,
        )
        sampling = asyncio.create_task(watch.run())
        stop = asyncio.Event()
        sending = asyncio.create_task(batch.run(self.plan.async_rate, stop)) if with_async else None
        try:
            if k > 0:
                if sending is not None:
                    await self.clock.sleep(self.plan.async_lead)
                await rt.run(k, self.plan.realtime_requests(k))
            else:
                await self.clock.sleep(seconds)
        finally:
            stop.set()
            if sending is not None:
                await sending
            sampling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampling
        await self._settle()
        self.abandoned.update(batch.abandoned)
        attempts = self.attempts.since(started)
        delivered = {r.request_id: r.tokens for r in (*rt.records, *batch.records) if r.ok}
        return StageMeasure(
            rt.records,
            batch.records,
            watch.pool,
            watch.bands,
            attempts=attempts,
            waste=wasted_tokens(attempts, delivered),
            model_service_s=await self._request_time(before) if before is not None else None,
        )

    async def _request_time(self, before: dict[float, float]) -> float | None:
        """The model servers' median request time over the stage (no per-attempt view)."""
        after = await scrape_request_time(self.session, self.stack.endpoints)
        return histogram_median(before, after)

    async def _settle(self) -> None:
        """Wait until the model servers are idle (abandoned work cancelled, nothing left)."""
        end = self.clock.now() + SETTLE_LIMIT
        while self.clock.now() < end and any(
            e.num_running or e.num_waiting for e in self.stack.engines
        ):
            await self.clock.sleep(0.1)


async def _run_mode(
    spec: ModeSpec, options: IsolationOptions, plan: StagePlan, clock: Clock, say: Progress
) -> ModeResult:
    judge = Judge(options.capacity, spec.ceiling, options.tolerance_env(spec.env))
    lag = LoopLag()
    lagging = asyncio.create_task(lag.run())
    try:
        async with (
            _running(spec, options, clock) as stack,
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session,
        ):
            attempts = AttemptLog(clock, stack.engines)
            unwatch = attempts.watch()
            try:
                run = _ModeRun(stack, plan, clock, session, attempts, lag, {})
                return await _stages(run, judge, options, say)
            finally:
                unwatch()
    finally:
        lagging.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lagging


def _running(
    spec: ModeSpec, options: IsolationOptions, clock: Clock
) -> contextlib.AbstractAsyncContextManager[Stack]:
    """The system of ``spec``: in this process, or scaled out (several routers or processors)."""
    if not options.topology.replicated:
        return running_stack(
            spec, capacity=options.capacity, clock=clock, endpoints=options.endpoints
        )
    from sluiceway.bench.isolation.replicas import running_replicas

    return running_replicas(
        spec, options.topology, capacity=options.capacity, clock=clock, endpoints=options.endpoints
    )


async def _stages(
    run: _ModeRun, judge: Judge, options: IsolationOptions, say: Progress
) -> ModeResult:
    plan = run.plan
    say("  async-only stage")
    mark = run.lag.mark()
    async_only = await run.stage("ao", 0, with_async=True, seconds=plan.async_only_seconds)
    service = service_time(async_only)
    async_only_figs = async_only_figures(async_only, judge, service)
    checks: list[ValidatorCheck] = []
    figures: dict[str, dict[str, float | None]] = {}
    stages = [async_only]
    rps: dict[int, float] = {}
    for level in plan.levels:
        k = realtime_concurrency(level, options.capacity)
        say(f"  level {level} (k = {k}): baseline, then mixed")
        level_mark = run.lag.mark()
        baseline = await run.stage(f"b{level}", k, with_async=False)
        mixed = await run.stage(f"m{level}", k, with_async=True)
        stages += [baseline, mixed]
        rps[level] = realtime_rps(baseline, judge, level)
        checks += level_checks(level, baseline, mixed, judge)
        fig = level_figures(level, baseline, mixed, judge, service)
        fig["loop_lag_p99_ms"] = _round(run.lag.p99(level_mark))
        figures[str(level)] = fig
    checks += async_only_checks(async_only, baseline_100(rps, options.capacity), judge)
    checks += band_checks(stages)
    checks.append(_abandoned_check(run))
    lag = lag_check(run.lag.p99(mark), options.time_scale, judge)
    checks.append(lag)
    reason = None if lag.passed else too_busy(lag)
    return ModeResult(reason is None, checks, figures, async_only_figs, reason)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _abandoned_check(run: _ModeRun) -> ValidatorCheck:
    late = sum(
        1
        for a in run.attempts.attempts
        if a.request_id in run.abandoned and a.started > run.abandoned[a.request_id] + ABANDON_GRACE
    )
    return ValidatorCheck("abandoned requests never reach the model", late == 0, float(late), 0.0)


def lag_bound_ms(judge: Judge) -> float:
    """A tenth of the smallest absolute tolerance judged (30 ms for 0.3 s), in milliseconds:
    a loop later than that could move a latency across its bound by itself."""
    smallest = min(tolerance("TTFT_ABS", None, judge.env), tolerance("E2E_ABS", None, judge.env))
    return 100.0 * smallest


def lag_check(p99_ms: float | None, scale: float, judge: Judge) -> ValidatorCheck:
    """The loop's lag p99, in scaled milliseconds, under :func:`lag_bound_ms`: at every time
    scale a late loop makes the mode invalid (the machine was too busy), never failed."""
    bound = lag_bound_ms(judge)
    observed = None if p99_ms is None else p99_ms * scale
    return ValidatorCheck(LAG_CHECK, observed is not None and observed < bound, observed, bound)


def too_busy(check: ValidatorCheck) -> str:
    """The invalid reason of a failed lag check."""
    seen = "not measured" if check.observed is None else f"{check.observed:.1f} ms"
    return (
        f"machine too busy: event-loop lag p99 (scaled) {seen}, bound {check.bound:g} ms; "
        "the figures were not judged (run on a quieter machine or at a lower time scale)"
    )
