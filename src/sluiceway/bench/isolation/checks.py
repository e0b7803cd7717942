"""The nightly isolation validator's checks, reproduced (pure).

Per level L: the realtime load alone (baseline) against the same load mixed with an async
backlog, on the overlap window minus the warm-up; then the async-only stage (does async work
alone fill the pool?) and the band checks (was each kind of traffic classified into its
priority band?). Every check is a :class:`ValidatorCheck` with the value observed and the bound
it was held to. Checks named ``... (observation)`` are reported but never fail a run. Two
depart from upstream on purpose: "async uses slack" counts answers delivered (goodput), not
dispatches, and "pool held at capacity" judges admissions (running + waiting at the model
servers) by default (``AMT_ENFORCE_CAPACITY=0`` makes it an observation again).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sluiceway.bench.isolation.records import (
    RequestRecord,
    Window,
    baseline_window,
    mixed_window,
    percentile,
    treatment_stats,
)
from sluiceway.bench.isolation.tolerances import tolerance
from sluiceway.bench.isolation.waste import ModelAttempt, Waste

__all__ = [
    "ASYNC_PRIORITIES",
    "LAG_CHECK",
    "BandSample",
    "Judge",
    "PoolSample",
    "StageMeasure",
    "ValidatorCheck",
    "async_only_checks",
    "band_checks",
    "dispatch_rate",
    "goodput",
    "level_checks",
]

ASYNC_PRIORITIES = (60, 30, -5, -10)
REALTIME_PRIORITY = 100
BATCH_PRIORITIES = (30, -10)
OBSERVATION = " (observation)"
VALIDITY = " (validity)"
LAG_CHECK = "event-loop lag p99 (ms, scaled)" + VALIDITY


@dataclass(frozen=True)
class ValidatorCheck:
    """One check: ``passed`` when ``observed`` is within ``bound`` (the direction is the
    check's own, documented in docs/isolation.md)."""

    name: str
    passed: bool
    observed: float | None
    bound: float | None

    @property
    def counts(self) -> bool:
        """Observations are reported, not judged; validity checks decide whether the mode's
        figures can be trusted at all, not whether it passed."""
        return not self.name.endswith((OBSERVATION, VALIDITY))

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "passed": self.passed,
            "observed": self.observed,
            "bound": self.bound,
        }


@dataclass(frozen=True)
class PoolSample:
    """The model servers at one instant: running and waiting requests, and how many of the
    running ones are realtime."""

    at: float
    running: int
    waiting: int
    realtime_running: int = 0


@dataclass(frozen=True)
class BandSample:
    """The router's cumulative request counts by priority at one instant."""

    at: float
    counts: Mapping[int, float]


@dataclass
class StageMeasure:
    """Everything one stage measured."""

    realtime: list[RequestRecord] = field(default_factory=list)
    batch: list[RequestRecord] = field(default_factory=list)
    pool: list[PoolSample] = field(default_factory=list)
    bands: list[BandSample] = field(default_factory=list)
    attempts: list[ModelAttempt] = field(default_factory=list)  # the model's, when observed
    waste: Waste = field(default_factory=Waste)
    # the model servers' median request time (their histograms), where attempts are not seen
    model_service_s: float | None = None


@dataclass(frozen=True)
class Judge:
    """The run's constants: capacity C, the async ceiling (holdback's ``minCeiling``, else
    1.0), the tolerance settings (``AMT_*``)."""

    capacity: int
    ceiling: float = 1.0
    env: Mapping[str, str] = field(default_factory=dict)

    def tol(self, key: str, level: int | None = None) -> float:
        return tolerance(key, level, self.env)

    @property
    def enforce_capacity(self) -> bool:
        """Judged unless ``AMT_ENFORCE_CAPACITY=0`` (upstream only observes it by default)."""
        return self.env.get("AMT_ENFORCE_CAPACITY", "").strip() != "0"


def dispatch_rate(
    bands: Sequence[BandSample], window: Window, priorities: Sequence[int]
) -> float | None:
    """Requests per second over ``priorities`` from counter deltas of the samples inside
    ``window``; None with fewer than two samples."""
    inside = [b for b in bands if window.start <= b.at <= window.end]
    if len(inside) < 2 or inside[-1].at <= inside[0].at:
        return None
    first, last = inside[0], inside[-1]
    delta = sum(last.counts.get(p, 0.0) - first.counts.get(p, 0.0) for p in priorities)
    return delta / (last.at - first.at)


def _upper(name: str, observed: float | None, bound: float) -> ValidatorCheck:
    return ValidatorCheck(name, observed is not None and observed <= bound, observed, bound)


def _lower(name: str, observed: float | None, bound: float) -> ValidatorCheck:
    return ValidatorCheck(name, observed is not None and observed >= bound, observed, bound)


def _capacity(name: str, pool: Sequence[PoolSample], judge: Judge) -> ValidatorCheck:
    """Admissions, not what the model happened to run: running plus waiting at the model
    servers, against C plus ``CAPACITY_SLACK`` (one request: an evicted request's abort may
    still hold its slot for a step when the realtime request that evicted it arrives)."""
    peak = max((s.running + s.waiting for s in pool), default=0)
    bound = judge.capacity + judge.tol("CAPACITY_SLACK")
    suffix = "" if judge.enforce_capacity else OBSERVATION
    return ValidatorCheck(f"{name}pool held at capacity{suffix}", peak <= bound, peak, bound)


def goodput(batch: Sequence[RequestRecord], window: Window) -> float | None:
    """Async answers delivered to a waiting client per second of ``window``: 200 within the
    client's patience (an abandoned request is never ``ok``); None for an empty window."""
    if window.length <= 0:
        return None
    return sum(1 for r in batch if r.ok and window.start <= r.end <= window.end) / window.length


def level_checks(
    level: int, baseline: StageMeasure, mixed: StageMeasure, judge: Judge
) -> list[ValidatorCheck]:
    """The checks of level ``level`` (named ``L<level> ...``)."""
    name = f"L{level} "
    warmup = judge.tol("WARMUP_S", level)
    window = mixed_window([mixed.realtime, mixed.batch], warmup)
    if window.length <= 0:
        return [ValidatorCheck(name + "members overlapped", False, window.length, 0.0)]
    base = treatment_stats(baseline.realtime, baseline_window(baseline.realtime, warmup))
    mix = treatment_stats(mixed.realtime, window)
    minimum = judge.tol("MIN_SAMPLES", level)
    out = [
        ValidatorCheck(name + "members overlapped", True, window.length, 0.0),
        _lower(name + "samples", float(min(base.samples, mix.samples)), minimum),
        _upper(name + "realtime errors", float(base.errors + mix.errors), 0.0),
    ]
    for metric, factor, absolute in (
        ("ttft", "TTFT_FACTOR", "TTFT_ABS"),
        ("e2e", "E2E_FACTOR", "E2E_ABS"),
    ):
        for p, label in ((0.5, "p50"), (0.9, "p90")):
            b = base.ttft_p(p) if metric == "ttft" else base.e2e_p(p)
            m = mix.ttft_p(p) if metric == "ttft" else mix.e2e_p(p)
            bound = (b or 0.0) * judge.tol(factor, level) + judge.tol(absolute, level)
            check = _upper(f"{name}{metric} {label}", m, bound)
            out.append(check if b is not None else ValidatorCheck(check.name, False, m, None))
    out.append(_lower(name + "req/s", mix.rps, base.rps * judge.tol("RPS_FACTOR", level)))
    out.append(_lower(name + "output tok/s", mix.tps, base.tps * judge.tol("TPS_FACTOR", level)))
    if level <= 20:
        out.append(_slack_check(name, mixed, window))
    out.append(_stream_sanity(name, base.ttft_p(0.5), base.e2e_p(0.5), judge, level))
    out.append(
        _capacity(name, [s for s in mixed.pool if window.start <= s.at <= window.end], judge)
    )
    return out


def _slack_check(name: str, mixed: StageMeasure, window: Window) -> ValidatorCheck:
    """Judged on goodput, never on dispatches: a request dispatched and then abandoned used
    the pool for nobody (upstream judges the router's dispatch rate)."""
    rate = goodput(mixed.batch, window) or 0.0
    return ValidatorCheck(name + "async uses slack", rate > 0, rate, 0.0)


def _stream_sanity(
    name: str, ttft: float | None, e2e: float | None, judge: Judge, level: int
) -> ValidatorCheck:
    bound = judge.tol("STREAM_SANITY_RATIO", level)
    ratio = ttft / e2e if ttft is not None and e2e else None
    return ValidatorCheck(
        name + "streaming sanity", ratio is not None and ratio < bound, ratio, bound
    )


def async_only_checks(
    stage: StageMeasure, baseline_100_rps: float | None, judge: Judge
) -> list[ValidatorCheck]:
    """Does async work alone fill the pool (its allowed share under holdback)?"""
    name = "async-only "
    running = [float(s.running) for s in stage.pool]
    full = judge.capacity * judge.ceiling
    out = [
        _lower(
            name + "pool saturation (max)",
            max(running, default=None),
            judge.tol("ASYNC_SAT_MIN") * full,
        ),
        _lower(
            name + "pool saturation (p50)",
            percentile(running, 0.5) if running else None,
            judge.tol("ASYNC_SAT_P50_MIN") * full,
        ),
    ]
    done = [r for r in stage.batch if r.ok]
    out.append(ValidatorCheck(name + "completions", len(done) > 0, float(len(done)), 0.0))
    span = Window(stage.bands[0].at, stage.bands[-1].at) if stage.bands else Window(0.0, 0.0)
    rate = dispatch_rate(stage.bands, span, ASYNC_PRIORITIES)
    if baseline_100_rps is None:
        out.append(ValidatorCheck(name + "dispatch rate", False, rate, None))
    else:
        bound = judge.tol("ASYNC_RPS_FACTOR") * baseline_100_rps * judge.ceiling
        out.append(_lower(name + "dispatch rate", rate, bound))
    expected = judge.tol("EXPECTED_OUTPUT_TOKENS")
    wrong = sum(1 for r in done if r.tokens != expected)
    out.append(
        ValidatorCheck(
            name + "results honour ignore_eos", bool(done) and wrong == 0, float(wrong), 0.0
        )
    )
    out.append(_capacity(name, stage.pool, judge))
    return out


def band_checks(stages: Sequence[StageMeasure]) -> list[ValidatorCheck]:
    """Realtime reached band 100 and async the batch bands, over the whole run."""
    peak: dict[int, float] = {}
    for stage in stages:
        for sample in stage.bands:
            for prio, count in sample.counts.items():
                peak[prio] = max(peak.get(prio, 0.0), count)
    realtime = peak.get(REALTIME_PRIORITY, 0.0)
    batch = sum(peak.get(p, 0.0) for p in BATCH_PRIORITIES)
    return [
        ValidatorCheck("realtime classified into band 100", realtime > 0, realtime, 0.0),
        ValidatorCheck("async classified into batch bands", batch > 0, batch, 0.0),
    ]


def median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None
