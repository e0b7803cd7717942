"""``sluiceway bench isolation --quick`` end to end: the report's shape, the negative control
fails its TTFT checks, eviction passes. Absolute bounds are the benchmark's business."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluiceway.bench.isolation import IsolationOptions, run_isolation_async, write_report

pytestmark = [pytest.mark.serial, pytest.mark.slow]


@pytest.mark.timeout(420)
async def test_quick_run_report_shape_negative_control_and_eviction(tmp_path: Path) -> None:
    options = IsolationOptions(modes=("none", "eviction"), quick=True, output=tmp_path)
    report = await run_isolation_async(options)
    data = json.loads(write_report(report, tmp_path).read_text())
    assert (tmp_path / "summary.html").read_text().startswith("<!doctype html>")

    assert set(data["modes"]) == {"none", "eviction"}
    for mode in data["modes"].values():
        assert set(mode) == {"valid", "checks", "figures"}
        assert mode["valid"] is True
        assert all(set(c) == {"name", "passed", "observed", "bound"} for c in mode["checks"])
        assert set(mode["figures"]) == {"80"}
        assert {"ttft_p90_ratio", "async_slack_ratio", "wasted_tokens_pct", "max_running"} <= set(
            mode["figures"]["80"]
        )

    # the attempt log saw the model's work (wasted tokens and abandonment are judged on it)
    assert data["modes"]["eviction"]["figures"]["80"]["generated_tokens"] > 0

    none = {c["name"]: c["passed"] for c in data["modes"]["none"]["checks"]}
    assert none["L80 ttft p50"] is False and none["L80 ttft p90"] is False
    failed = [c.name for c in report.modes["eviction"].failed()]
    assert failed == []
