"""The figures reported beside the checks (pure), judged by what clients receive.

- **Service time**: the model's own time for one async request, from its batch slot to its
  last token (median over the async-only stage's completed attempts; against real servers, the
  median of their request-time histograms). The client's queue-inclusive E2E is kept as a
  second, labelled number: it grows with the backlog and would flatter the slack ratio.
- **Slack**: (C - mean realtime running) / service time: the async answers per second the
  realtime load leaves room for (no ratio when the slack is under one slot).
- **Goodput**: async answers delivered to a waiting client (200 within its patience) per
  second of the steady-state window; never dispatches, which include requests nobody waits for.
- **Waste**: every token generated for nobody (requests no client received, evicted attempts a
  delivered answer did not keep) plus prompt tokens a resume recomputed, over all generated.
- **Fates**: one per async request, summing to the stage's arrivals (``fates``).
- **Capacity**: the most requests the model servers ran and held (running + waiting).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from sluiceway.bench.isolation.checks import (
    ASYNC_PRIORITIES,
    Judge,
    StageMeasure,
    dispatch_rate,
    goodput,
)
from sluiceway.bench.isolation.fates import fate_counts
from sluiceway.bench.isolation.plan import realtime_concurrency
from sluiceway.bench.isolation.records import (
    RequestRecord,
    Window,
    baseline_window,
    mixed_window,
    treatment_stats,
)

__all__ = [
    "GOAL_TTFT_ABS",
    "GOAL_TTFT_FACTOR",
    "ServiceTime",
    "async_only_figures",
    "baseline_100",
    "level_figures",
    "service_time",
]

# sluiceway's own goal for the best mode (far tighter than the validator's 1.5 x + 0.3 s).
GOAL_TTFT_FACTOR = 1.2
GOAL_TTFT_ABS = 0.05

Figures = dict[str, float | None]


@dataclass(frozen=True)
class ServiceTime:
    """The model's service time (the slack's divisor) and the queue-inclusive E2E beside it."""

    model: float | None
    queued: float | None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def service_time(async_only: StageMeasure) -> ServiceTime:
    """From the async-only stage: the median slot-to-last-token time of its completed async
    attempts (else the model servers' histogram median), and its clients' median E2E."""
    ids = {r.request_id for r in async_only.batch}
    model = [
        t for a in async_only.attempts if a.request_id in ids and (t := a.service_time) is not None
    ]
    queued = _median([r.e2e for r in async_only.batch if r.ok])
    return ServiceTime(_median(model) or async_only.model_service_s, queued)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _pct(part: int, whole: int) -> float | None:
    """None when nothing was seen (real servers: no per-attempt view), never a flattering 0."""
    return 100.0 * part / whole if whole else None


def _async_figures(stage: StageMeasure, window: Window) -> Figures:
    """Goodput, dispatches, waste, fates and admissions of one stage's async work."""
    waste = stage.waste
    out: Figures = {
        "async_goodput_per_s": goodput(stage.batch, window),
        "async_dispatches_per_s": dispatch_rate(stage.bands, window, ASYNC_PRIORITIES),
        "generated_tokens": float(waste.generated),
        "wasted_tokens": float(waste.wasted),
        "wasted_tokens_pct": _pct(waste.wasted, waste.generated),
        "undelivered_tokens_pct": _pct(waste.undelivered, waste.generated),
        "evicted_tokens_pct": _pct(waste.evicted, waste.generated),
        "recomputed_prompt_tokens_pct": _pct(waste.recomputed, waste.generated),
        "max_running": float(max((s.running for s in stage.pool), default=0)),
        "max_admitted": float(max((s.running + s.waiting for s in stage.pool), default=0)),
    }
    for fate, count in fate_counts(stage.batch, stage.attempts).items():
        out[f"fate_{fate}"] = float(count)
    return out


def _slack(slots: float | None, service: ServiceTime, rate: float | None) -> Figures:
    """Slack rates and goodput against them (model-time, then queue-inclusive)."""
    usable = slots is not None and slots >= 1
    model = slots / service.model if slots is not None and service.model else None
    queued = slots / service.queued if slots is not None and service.queued else None
    return {
        "service_time_s": service.model,
        "service_time_queued_s": service.queued,
        "slack_slots": slots,
        "slack_completions_per_s": model,
        "slack_completions_per_s_queued": queued,
        "goodput_slack_ratio": _ratio(rate, model) if usable else None,
        "goodput_slack_ratio_queued": _ratio(rate, queued) if usable else None,
    }


def level_figures(
    level: int,
    baseline: StageMeasure,
    mixed: StageMeasure,
    judge: Judge,
    service: ServiceTime,
) -> Figures:
    """The figures of one level (seconds, ratios, per-second rates, percentages, counts)."""
    warmup = judge.tol("WARMUP_S", level)
    window = mixed_window([mixed.realtime, mixed.batch], warmup)
    base = treatment_stats(baseline.realtime, baseline_window(baseline.realtime, warmup))
    mix = treatment_stats(mixed.realtime, window)
    inside = [s for s in mixed.pool if window.start <= s.at <= window.end]
    rt_running = statistics.fmean(s.realtime_running for s in inside) if inside else None
    slack_slots = None if rt_running is None else judge.capacity - rt_running
    base_p90, mix_p90 = base.ttft_p(0.9), mix.ttft_p(0.9)
    goal = None if base_p90 is None else base_p90 * GOAL_TTFT_FACTOR + GOAL_TTFT_ABS
    async_figures = _async_figures(mixed, window)
    out: Figures = {
        "window_s": window.length,
        "baseline_ttft_p50_s": base.ttft_p(0.5),
        "baseline_ttft_p90_s": base_p90,
        "mixed_ttft_p50_s": mix.ttft_p(0.5),
        "mixed_ttft_p90_s": mix_p90,
        "ttft_p50_ratio": _ratio(mix.ttft_p(0.5), base.ttft_p(0.5)),
        "ttft_p90_ratio": _ratio(mix_p90, base_p90),
        "ttft_p90_goal_s": goal,
        "ttft_p90_goal_met": None if goal is None or mix_p90 is None else float(mix_p90 <= goal),
        "baseline_e2e_p50_s": base.e2e_p(0.5),
        "baseline_e2e_p90_s": base.e2e_p(0.9),
        "mixed_e2e_p50_s": mix.e2e_p(0.5),
        "mixed_e2e_p90_s": mix.e2e_p(0.9),
        "e2e_p50_ratio": _ratio(mix.e2e_p(0.5), base.e2e_p(0.5)),
        "e2e_p90_ratio": _ratio(mix.e2e_p(0.9), base.e2e_p(0.9)),
        "realtime_rps_ratio": _ratio(mix.rps, base.rps),
        "mean_realtime_running": rt_running,
        **_slack(slack_slots, service, async_figures["async_goodput_per_s"]),
        **async_figures,
        "capacity": float(judge.capacity),
    }
    return {k: _round(v) for k, v in out.items()}


def async_only_figures(stage: StageMeasure, judge: Judge, service: ServiceTime) -> Figures:
    """The async-only stage: the whole pool is slack (C / service time)."""
    window = baseline_window(stage.batch, judge.tol("WARMUP_S"))
    out: Figures = {
        "window_s": window.length,
        **_slack(float(judge.capacity), service, goodput(stage.batch, window)),
        **_async_figures(stage, window),
        "capacity": float(judge.capacity),
    }
    return {k: _round(v) for k, v in out.items()}


def realtime_rps(stage: StageMeasure, judge: Judge, level: int) -> float:
    """The baseline realtime requests per second of ``stage`` (its own window)."""
    records: Sequence[RequestRecord] = stage.realtime
    window = baseline_window(records, judge.tol("WARMUP_S", level))
    return treatment_stats(records, window).rps


def baseline_100(rps: dict[int, float], capacity: int) -> float | None:
    """The realtime baseline rate at 100 %; from the highest level run when 100 % was not
    (a closed loop's rate grows with k)."""
    if not rps:
        return None
    if 100 in rps:
        return rps[100]
    level = max(rps)
    return rps[level] * capacity / realtime_concurrency(level, capacity)
