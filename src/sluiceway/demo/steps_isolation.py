"""Step H: realtime isolation, short. One level (80 % of the pool) of the isolation benchmark,
no protection against the best mode, at the demo's time scale (at most 5): the negative
control must fail its TTFT checks and the best mode must pass every judged check. The event
loop's lag is reported, not judged: the whole system shares one process here. The step judges
what isolation is about, realtime TTFT and the pool held at capacity; throughput checks of such
short stages sit within noise of their bounds and are reported (the benchmark judges them)."""

from __future__ import annotations

from sluiceway.bench.isolation import IsolationOptions, ModeResult, run_isolation_async
from sluiceway.bench.isolation.checks import ValidatorCheck
from sluiceway.demo.context import StepContext
from sluiceway.demo.findings import StepReport

__all__ = ["scenario_h"]

MAX_SCALE = 5.0
_LAG = "event-loop lag"


def _judged(checks: list[ValidatorCheck]) -> list[ValidatorCheck]:
    return [c for c in checks if c.counts and not c.name.startswith(_LAG)]


async def scenario_h(ctx: StepContext, report: StepReport) -> None:
    options = IsolationOptions(
        modes=("none", "best"),
        quick=True,
        time_scale=min(ctx.clock.scale, MAX_SCALE),
        realtime_seconds=10.0,
        async_only_seconds=6.0,
    )
    result = await run_isolation_async(options)
    none, best = result.modes["none"], result.modes["best"]
    ttft_failed = [c.name for c in _judged(none.checks) if "ttft" in c.name and not c.passed]
    report.check(
        "no protection: realtime TTFT checks fail (the control)",
        bool(ttft_failed),
        f"{', '.join(ttft_failed) or 'none failed'}; {_figures(none)}",
    )
    isolation = [c for c in _judged(best.checks) if "ttft" in c.name or "capacity" in c.name]
    failed = [f"{c.name}: {_num(c.observed)} vs {_num(c.bound)}" for c in isolation if not c.passed]
    others = [c.name for c in _judged(best.checks) if c not in isolation and not c.passed]
    report.check(
        "best mode: realtime TTFT within bounds, pool held at capacity",
        bool(isolation) and not failed,
        f"{'; '.join(failed) or 'all passed'}; {_figures(best)}"
        + (f"; other checks missed: {', '.join(others)}" if others else ""),
    )


def _num(value: float | None) -> str:
    return "none" if value is None else f"{value:.3g}"


def _figures(mode: ModeResult) -> str:
    """TTFT p90 mixed over alone, and the loop's lag (reported, not judged)."""
    figures = next(iter(mode.figures.values()), {})
    ratio, lag = figures.get("ttft_p90_ratio"), figures.get("loop_lag_p99_ms")
    return f"TTFT p90 x{ratio}, event-loop lag p99 {lag} ms"
