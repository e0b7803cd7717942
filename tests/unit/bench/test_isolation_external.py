"""The external client: inference-perf configs per treatment, and ``--analyze`` judging a
directory of inference-perf results like a builtin run."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sluiceway.bench.isolation.command import exit_code, parse_settings
from sluiceway.bench.isolation.inference_perf import analyze_dir, write_configs
from sluiceway.bench.isolation.plan import IsolationOptions


def _entries(k: int, latency: float, ttft: float, until: float, start: float = 0.0) -> list[dict]:
    out = []
    for _ in range(k):
        t = start
        while t + latency <= until:
            info = {
                "response_metrics": {
                    "output_tokens": 128,
                    "server_usage": {"completion_tokens": 128},
                    "output_token_times": [t + ttft],
                }
            }
            out.append({"start_time": t, "end_time": t + latency, "info": info, "error": None})
            t += latency
    return out


def _write(folder: Path, name: str, entries: list[dict]) -> None:
    target = folder / name / "results"
    target.mkdir(parents=True)
    (target / "per_request_lifecycle_metrics.json").write_text(json.dumps(entries))


def test_analyze_dir_judges_inference_perf_results(tmp_path: Path) -> None:
    _write(tmp_path, "async_only", _entries(10, 2.0, 0.1, 60.0))
    _write(tmp_path, "baseline_80", _entries(8, 2.0, 0.1, 80.0))
    _write(tmp_path, "mixed_80_rt", _entries(8, 2.1, 0.15, 100.0, start=20.0))
    _write(tmp_path, "mixed_80_async", _entries(2, 2.0, 0.1, 110.0))
    samples = [
        {"at": float(t), "running": 10, "waiting": 0, "bands": {"100": t, "-10": 5.0 * t}}
        for t in range(0, 110, 5)
    ]
    (tmp_path / "samples.json").write_text(json.dumps(samples))
    options = IsolationOptions(modes=("eviction",), levels=(80,))
    report = analyze_dir(tmp_path, options)
    result = report.modes["eviction"]
    assert result.valid and set(result.figures) == {"80"}
    assert result.passed, [c.name for c in result.failed()]
    assert result.figures["80"]["ttft_p50_ratio"] == 1.5
    assert exit_code(report) == 0


def test_write_configs_one_per_treatment(tmp_path: Path) -> None:
    options = IsolationOptions(quick=True, endpoints=("http://coordinator:8080",))
    written = write_configs(options, tmp_path, Path("/opt/ip-venv"))
    names = sorted(p.name for p in written)
    assert names == [
        "async_only.yaml",
        "baseline_80.yaml",
        "mixed_80_async.yaml",
        "mixed_80_rt.yaml",
        "run.sh",
    ]
    rt = yaml.safe_load((tmp_path / "inference-perf" / "mixed_80_rt.yaml").read_text())
    assert rt["load"]["type"] == "concurrent"
    assert rt["load"]["stages"] == [{"concurrency_level": 8, "num_requests": 64}]
    assert rt["api"]["headers"] == {
        "x-llm-d-async-mode": "passthrough",
        "x-llm-d-tenant": "realtime",
    }
    assert rt["api"]["streaming"] is True and rt["server"]["ignore_eos"] is True
    batch = yaml.safe_load((tmp_path / "inference-perf" / "mixed_80_async.yaml").read_text())
    assert batch["load"]["stages"][0]["rate"] == 10 and batch["load"]["request_timeout"] == 20
    script = (tmp_path / "inference-perf" / "run.sh").read_text()
    assert "/opt/ip-venv/bin/inference-perf --config_file mixed_80_async.yaml &" in script


def test_settings_must_be_amt_pairs() -> None:
    assert parse_settings(["AMT_TTFT_ABS=0.5"]) == {"AMT_TTFT_ABS": "0.5"}
    for bad in ("TTFT_ABS=1", "AMT_X"):
        try:
            parse_settings([bad])
        except ValueError:
            continue
        raise AssertionError(bad)
