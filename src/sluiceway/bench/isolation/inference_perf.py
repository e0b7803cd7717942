"""The external client: inference-perf configs for every stage, and the analysis of its
results.

``write_configs`` writes one config per treatment (``async_only``, ``baseline_<L>``,
``mixed_<L>_async``, ``mixed_<L>_rt``), the nightly's load shapes, pointed at a running
coordinator (``--endpoints``, default ``http://127.0.0.1:8081``). ``analyze_dir`` reads
``<DIR>/<treatment>/**/per_request_lifecycle_metrics.json`` (and ``<DIR>/samples.json`` when a
sampler wrote one: ``[{"at", "running", "waiting", "bands": {"<priority>": count}}]``) and
judges them as one mode, named by ``--modes`` (default ``eviction``, upstream's default lane).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from sluiceway.bench.isolation.checks import (
    BandSample,
    Judge,
    PoolSample,
    StageMeasure,
    async_only_checks,
    band_checks,
    level_checks,
)
from sluiceway.bench.isolation.figures import level_figures, realtime_rps, service_time
from sluiceway.bench.isolation.lifecycle import read_lifecycle_file
from sluiceway.bench.isolation.modes import mode_spec
from sluiceway.bench.isolation.plan import IsolationOptions, realtime_concurrency
from sluiceway.bench.isolation.records import RequestRecord
from sluiceway.bench.isolation.result import IsolationReport, ModeResult

__all__ = ["LIFECYCLE_FILE", "analyze_dir", "write_configs"]

LIFECYCLE_FILE = "per_request_lifecycle_metrics.json"
DEFAULT_COORDINATOR = "http://127.0.0.1:8081"


def _config(
    base_url: str,
    model: str,
    load: dict[str, Any],
    headers: dict[str, str],
    streaming: bool,
    out: str,
) -> dict[str, Any]:
    return {
        "load": load,
        "api": {"type": "completion", "streaming": streaming, "headers": headers},
        "server": {"type": "vllm", "model_name": model, "base_url": base_url, "ignore_eos": True},
        "data": {"type": "mock"},
        "report": {"request_lifecycle": {"summary": True, "per_stage": True, "per_request": True}},
        "storage": {"local_storage": {"path": out}},
    }


def write_configs(
    options: IsolationOptions, output: Path, venv: Path | None, model: str = "sim-model"
) -> list[Path]:
    """One inference-perf config per treatment under ``output/inference-perf/``, plus
    ``run.sh`` running them in order with ``<venv>/bin/inference-perf``."""
    plan = options.plan()
    base = (options.endpoints or (DEFAULT_COORDINATOR,))[0]
    rt_headers = {"x-llm-d-async-mode": "passthrough", "x-llm-d-tenant": "realtime"}
    as_headers = {"x-llm-d-async-mode": "wait", "x-llm-d-tenant": "batch"}
    duration = round(plan.realtime_seconds + plan.async_lead)
    asynchronous = {
        "type": "constant",
        "stages": [{"rate": plan.async_rate, "duration": duration}],
        "request_timeout": plan.async_timeout,
    }
    treatments: dict[str, dict[str, Any]] = {
        "async_only": _config(
            base,
            model,
            {
                **asynchronous,
                "stages": [{"rate": plan.async_rate, "duration": round(plan.async_only_seconds)}],
            },
            as_headers,
            False,
            "async_only",
        ),
    }
    for level in plan.levels:
        k = realtime_concurrency(level, options.capacity)
        rt = {
            "type": "concurrent",
            "stages": [{"concurrency_level": k, "num_requests": plan.realtime_requests(k)}],
            "request_timeout": 120,
        }
        treatments[f"baseline_{level}"] = _config(
            base, model, rt, rt_headers, True, f"baseline_{level}"
        )
        treatments[f"mixed_{level}_async"] = _config(
            base, model, asynchronous, as_headers, False, f"mixed_{level}_async"
        )
        treatments[f"mixed_{level}_rt"] = _config(
            base, model, rt, rt_headers, True, f"mixed_{level}_rt"
        )
    folder = output / "inference-perf"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, config in treatments.items():
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        written.append(path)
    written.append(_script(folder, treatments, venv, plan.async_lead))
    return written


def _script(folder: Path, treatments: dict[str, Any], venv: Path | None, lead: float) -> Path:
    tool = f"{venv}/bin/inference-perf" if venv else "inference-perf"
    lines = [
        "#!/bin/sh",
        "# Runs every treatment; mixed_<L>_async starts first, the realtime load after the lead.",
        "set -e",
        'cd "$(dirname "$0")"',
    ]
    for name in treatments:
        if name.endswith("_rt"):
            continue
        if name.endswith("_async"):
            rt = name.replace("_async", "_rt")
            lines += [
                f"{tool} --config_file {name}.yaml & pid=$!",
                f"sleep {lead:g}",
                f"{tool} --config_file {rt}.yaml",
                'wait "$pid"',
            ]
        else:
            lines.append(f"{tool} --config_file {name}.yaml")
    path = folder / "run.sh"
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return path


def _records(folder: Path) -> list[RequestRecord]:
    out: list[RequestRecord] = []
    for path in sorted(folder.rglob(LIFECYCLE_FILE)):
        out += read_lifecycle_file(path)
    return out


def _samples(path: Path) -> tuple[list[PoolSample], list[BandSample]]:
    if not path.is_file():
        return [], []
    pool, bands = [], []
    for s in json.loads(path.read_text()):
        pool.append(PoolSample(float(s["at"]), int(s["running"]), int(s.get("waiting", 0))))
        bands.append(
            BandSample(
                float(s["at"]), {int(k): float(v) for k, v in (s.get("bands") or {}).items()}
            )
        )
    return pool, bands


def _stage(
    rt: list[RequestRecord],
    batch: list[RequestRecord],
    pool: list[PoolSample],
    bands: list[BandSample],
) -> StageMeasure:
    records = rt + batch
    if not records:
        return StageMeasure(rt, batch)
    start, end = min(r.start for r in records), max(r.end for r in records)
    return StageMeasure(
        rt,
        batch,
        [p for p in pool if start <= p.at <= end],
        [b for b in bands if start <= b.at <= end],
    )


def analyze_dir(folder: Path, options: IsolationOptions) -> IsolationReport:
    """Judge inference-perf results as the builtin run's report (one mode)."""
    mode = options.modes[0] if len(options.modes) == 1 else "eviction"
    spec = mode_spec(mode, options.capacity)
    env = {**spec.env, **options.settings}
    judge = Judge(options.capacity, spec.ceiling, env)
    pool, bands = _samples(folder / "samples.json")
    async_only = _stage([], _records(folder / "async_only"), pool, bands)
    service = service_time(async_only)
    checks, figures, rps, stages = [], {}, {}, [async_only]
    for level in options.plan().levels:
        baseline = _stage(_records(folder / f"baseline_{level}"), [], pool, bands)
        mixed = _stage(
            _records(folder / f"mixed_{level}_rt"),
            _records(folder / f"mixed_{level}_async"),
            pool,
            bands,
        )
        if not baseline.realtime and not mixed.realtime:
            continue
        stages += [baseline, mixed]
        rps[level] = realtime_rps(baseline, judge, level)
        checks += level_checks(level, baseline, mixed, judge)
        figures[str(level)] = level_figures(level, baseline, mixed, judge, service)
    top = max(rps, default=None)
    base100 = (
        None
        if top is None
        else rps[top] * options.capacity / realtime_concurrency(top, options.capacity)
    )
    checks += async_only_checks(async_only, base100, judge)
    checks += band_checks(stages)
    report = IsolationReport(run={"analyzed": str(folder), "capacity": options.capacity})
    report.modes[mode] = ModeResult(bool(figures), checks, figures)
    return report
