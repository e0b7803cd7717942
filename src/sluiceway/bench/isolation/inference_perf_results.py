"""Judge what an inference-perf run left behind as a builtin run's report (one mode).

``analyze_dir`` reads ``<DIR>/<treatment>/**/per_request_lifecycle_metrics.json`` (moved onto
wall time by the treatment's ``harness.json``) and ``<DIR>/samples.json`` and judges them as one
mode, named by ``--modes`` (default ``eviction``, upstream's default lane), with the figures of
a builtin run: the model's service time from the model servers' request-time histogram over
the async-only stage, realtime requests in flight at each sample from the realtime records.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluiceway.bench.isolation.checks import (
    BandSample,
    Judge,
    PoolSample,
    StageMeasure,
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
from sluiceway.bench.isolation.inference_perf import HARNESS_FILE, LIFECYCLE_FILE, SAMPLES_FILE
from sluiceway.bench.isolation.lifecycle import pin_to_wall, read_lifecycle_file
from sluiceway.bench.isolation.modes import ModeSpec, mode_spec
from sluiceway.bench.isolation.plan import IsolationOptions
from sluiceway.bench.isolation.records import RequestRecord, Window
from sluiceway.bench.isolation.result import IsolationReport, ModeResult
from sluiceway.bench.isolation.sampler import histogram_median

__all__ = ["analyze_dir"]


def _records(folder: Path) -> list[RequestRecord]:
    out: list[RequestRecord] = []
    for path in sorted(folder.rglob(LIFECYCLE_FILE)):
        out += read_lifecycle_file(path)
    return out


def _treatment(folder: Path) -> list[RequestRecord]:
    """One treatment's records, on wall time when run.sh recorded its stop."""
    records = _records(folder)
    harness = folder / HARNESS_FILE
    if not harness.is_file():
        return records
    stamps = json.loads(harness.read_text())
    offset = stamps.get("clock_offset")
    return pin_to_wall(records, float(stamps["stop"]), None if offset is None else float(offset))


Histogram = dict[float, float]


@dataclass(frozen=True)
class _Samples:
    """What the sampler saw: the pool, the router's bands, the request-time histogram."""

    pool: list[PoolSample] = field(default_factory=list)
    bands: list[BandSample] = field(default_factory=list)
    request_time: list[tuple[float, Histogram]] = field(default_factory=list)


def _histogram(buckets: dict[str, Any]) -> Histogram:
    out: Histogram = {}
    for le, count in buckets.items():
        out[float(le)] = out.get(float(le), 0.0) + float(count)
    return out


def _read_samples(path: Path) -> _Samples:
    """``samples.json``; a null ``bands`` or ``request_time`` (not scraped) is skipped."""
    samples = _Samples()
    if not path.is_file():
        return samples
    for s in json.loads(path.read_text()):
        at = float(s["at"])
        samples.pool.append(PoolSample(at, int(s["running"]), int(s.get("waiting", 0))))
        if s.get("bands") is not None:
            samples.bands.append(BandSample(at, {int(k): float(v) for k, v in s["bands"].items()}))
        if s.get("request_time") is not None:
            samples.request_time.append((at, _histogram(s["request_time"])))
    return samples


def _span(records: Sequence[RequestRecord]) -> Window:
    if not records:
        return Window(0.0, 0.0)
    return Window(min(r.start for r in records), max(r.end for r in records))


def _in_flight(records: Sequence[RequestRecord], at: float) -> int:
    return sum(1 for r in records if r.start <= at < r.end)


def _stage(rt: list[RequestRecord], batch: list[RequestRecord], samples: _Samples) -> StageMeasure:
    """A stage's records and the samples inside its span; realtime requests running at each
    sample are counted from the realtime records (no live client to ask)."""
    span = _span(rt + batch)
    if span.length <= 0:
        return StageMeasure(rt, batch)
    return StageMeasure(
        rt,
        batch,
        [
            PoolSample(p.at, p.running, p.waiting, _in_flight(rt, p.at))
            for p in samples.pool
            if span.start <= p.at <= span.end
        ],
        [b for b in samples.bands if span.start <= b.at <= span.end],
    )


def _model_service(samples: _Samples, span: Window) -> float | None:
    """The median request time the model servers counted between the span's first and last
    samples (their histogram; no per-attempt view from outside)."""
    inside = [h for at, h in samples.request_time if span.start <= at <= span.end]
    return histogram_median(inside[0], inside[-1]) if len(inside) >= 2 else None


def _judge(options: IsolationOptions, spec: ModeSpec) -> Judge:
    """As the builtin runner judges."""
    return Judge(options.capacity, spec.ceiling, options.tolerance_env(spec.env))


def analyze_dir(folder: Path, options: IsolationOptions) -> IsolationReport:
    """Judge inference-perf results as the builtin run's report (one mode)."""
    mode = options.modes[0] if len(options.modes) == 1 else "eviction"
    judge = _judge(options, mode_spec(mode, options.capacity))
    samples = _read_samples(folder / SAMPLES_FILE)
    batch = _treatment(folder / "async_only")
    async_only = _stage([], batch, samples)
    async_only.model_service_s = _model_service(samples, _span(batch))
    service = service_time(async_only)
    checks, figures, rps, stages = [], {}, {}, [async_only]
    for level in options.plan().levels:
        baseline = _stage(_treatment(folder / f"baseline_{level}"), [], samples)
        mixed = _stage(
            _treatment(folder / f"mixed_{level}_rt"),
            _treatment(folder / f"mixed_{level}_async"),
            samples,
        )
        if not baseline.realtime and not mixed.realtime:
            continue
        stages += [baseline, mixed]
        rps[level] = realtime_rps(baseline, judge, level)
        checks += level_checks(level, baseline, mixed, judge)
        figures[str(level)] = level_figures(level, baseline, mixed, judge, service)
    checks += async_only_checks(async_only, baseline_100(rps, options.capacity), judge)
    checks += band_checks(stages)
    report = IsolationReport(
        run={
            "analyzed": str(folder),
            "capacity": options.capacity,
            "quick": options.quick,
            "warmup_s": judge.tol("WARMUP_S"),
        }
    )
    report.modes[mode] = ModeResult(
        bool(figures), checks, figures, async_only_figures(async_only, judge, service)
    )
    return report
