"""The figures reported per level beside the checks (pure).

Realtime latency mixed over baseline; async completions per second against the slack the
realtime load leaves (slack = (C - mean realtime running) / service time, the service time being
the async-only stage's median end-to-end latency; no ratio when the slack is under one slot);
generated tokens wasted on evicted work; the most requests the model servers ran and held.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from sluiceway.bench.isolation.checks import Judge, StageMeasure
from sluiceway.bench.isolation.records import (
    RequestRecord,
    Window,
    baseline_window,
    mixed_window,
    treatment_stats,
)

__all__ = ["GOAL_TTFT_ABS", "GOAL_TTFT_FACTOR", "level_figures", "service_time"]

# sluiceway's own goal for the best mode (far tighter than the validator's 1.5 x + 0.3 s).
GOAL_TTFT_FACTOR = 1.2
GOAL_TTFT_ABS = 0.05


def service_time(async_only: StageMeasure) -> float | None:
    """The median end-to-end latency of the async-only stage's completions."""
    done = [r.e2e for r in async_only.batch if r.ok]
    return statistics.median(done) if done else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def level_figures(
    level: int,
    baseline: StageMeasure,
    mixed: StageMeasure,
    judge: Judge,
    service: float | None,
) -> dict[str, float | None]:
    """The figures of one level (seconds, ratios, per-second rates, percentages)."""
    warmup = judge.tol("WARMUP_S", level)
    window = mixed_window([mixed.realtime, mixed.batch], warmup)
    base = treatment_stats(baseline.realtime, baseline_window(baseline.realtime, warmup))
    mix = treatment_stats(mixed.realtime, window)
    inside = [s for s in mixed.pool if window.start <= s.at <= window.end]
    rt_running = statistics.fmean(s.realtime_running for s in inside) if inside else None
    slack_slots = None if rt_running is None else judge.capacity - rt_running
    slack_rate = slack_slots / service if slack_slots is not None and service else None
    done = _completions(mixed, window)
    async_rate = done / window.length if window.length > 0 else None
    base_p90, mix_p90 = base.ttft_p(0.9), mix.ttft_p(0.9)
    goal = None if base_p90 is None else base_p90 * GOAL_TTFT_FACTOR + GOAL_TTFT_ABS
    out: dict[str, float | None] = {
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
        "service_time_s": service,
        "slack_slots": slack_slots,
        "slack_completions_per_s": slack_rate,
        "async_completions_per_s": async_rate,
        "async_slack_ratio": (
            _ratio(async_rate, slack_rate) if slack_slots is not None and slack_slots >= 1 else None
        ),
        "generated_tokens": float(mixed.generated_tokens),
        "wasted_tokens": float(mixed.wasted_tokens),
        "wasted_tokens_pct": (
            100.0 * mixed.wasted_tokens / mixed.generated_tokens if mixed.generated_tokens else 0.0
        ),
        "recomputed_prompt_tokens_pct": (
            100.0 * mixed.recomputed_tokens / mixed.generated_tokens
            if mixed.generated_tokens
            else 0.0
        ),
        "max_running": float(max((s.running for s in mixed.pool), default=0)),
        "max_admitted": float(max((s.running + s.waiting for s in mixed.pool), default=0)),
        "capacity": float(judge.capacity),
    }
    return {k: _round(v) for k, v in out.items()}


def _completions(stage: StageMeasure, window: Window) -> int:
    return sum(1 for r in stage.batch if r.ok and window.start <= r.end <= window.end)


def realtime_rps(stage: StageMeasure, judge: Judge, level: int) -> float:
    """The baseline realtime requests per second of ``stage`` (its own window)."""
    records: Sequence[RequestRecord] = stage.realtime
    window = baseline_window(records, judge.tol("WARMUP_S", level))
    return treatment_stats(records, window).rps
