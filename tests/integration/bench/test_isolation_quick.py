"""``sluiceway bench isolation --quick`` end to end: the report's shape, the negative control
fails its TTFT checks, eviction passes. Absolute bounds are the benchmark's business."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluiceway.bench.isolation import IsolationOptions, run_isolation_async, write_report
from sluiceway.bench.isolation.plan import Topology
from sluiceway.localservices import RedisServer

pytestmark = [pytest.mark.serial, pytest.mark.slow]


@pytest.mark.timeout(600)
async def test_quick_run_report_shape_negative_control_and_eviction(tmp_path: Path) -> None:
    options = IsolationOptions(modes=("none", "eviction"), quick=True, output=tmp_path)
    report = await run_isolation_async(options)
    data = json.loads(write_report(report, tmp_path).read_text())
    assert (tmp_path / "summary.html").read_text().startswith("<!doctype html>")

    assert set(data["modes"]) == {"none", "eviction"}
    fates = ("delivered", "abandoned_queued", "abandoned_running", "deadline", "dropped", "error")
    for mode in data["modes"].values():
        assert set(mode) == {"valid", "invalid_reason", "checks", "figures", "async_only"}
        if not mode["valid"]:  # a loaded machine: invalid, never failed, and it says so
            assert mode["invalid_reason"].startswith("machine too busy")
        assert all(set(c) == {"name", "passed", "observed", "bound"} for c in mode["checks"])
        assert set(mode["figures"]) == {"80"}
        for figures in (mode["figures"]["80"], mode["async_only"]):
            assert {"goodput_slack_ratio", "wasted_tokens_pct", "max_admitted"} <= set(figures)
            # one fate per async request: they add up to the arrivals
            assert figures["fate_arrivals"] > 0
            assert sum(figures[f"fate_{f}"] for f in fates) == figures["fate_arrivals"]
        # the slack divides by the model's own time (2 s for 128 tokens, a little more in a
        # full batch), never by the queue-inclusive E2E
        service = mode["figures"]["80"]["service_time_s"]
        assert 1.5 < service < 4.0
        assert mode["figures"]["80"]["service_time_queued_s"] >= service

    # the attempt log saw the model's work (wasted tokens and abandonment are judged on it)
    assert data["modes"]["eviction"]["figures"]["80"]["generated_tokens"] > 0

    none = {c["name"]: c["passed"] for c in data["modes"]["none"]["checks"]}
    assert none["L80 ttft p50"] is False and none["L80 ttft p90"] is False
    # the control admits past C into the model server's own queue: judged on admissions
    assert none["L80 pool held at capacity"] is False
    assert data["modes"]["none"]["figures"]["80"]["max_admitted"] > 11
    if report.modes["eviction"].valid:
        assert [c.name for c in report.modes["eviction"].failed()] == []


@pytest.mark.timeout(600)
async def test_router_replicas_and_processors_run_and_are_reported(
    tmp_path: Path,
    redis_server: RedisServer,  # the stack starts its own; this skips without redis-server
) -> None:
    options = IsolationOptions(
        modes=("eviction",),
        quick=True,
        output=tmp_path,
        realtime_seconds=4.0,
        async_only_seconds=3.0,
        async_lead_seconds=2.0,
        topology=Topology(routers=2, processors=2),
    )
    report = await run_isolation_async(options)
    data = json.loads(write_report(report, tmp_path).read_text())
    assert data["run"]["router_replicas"] == 2
    assert data["run"]["processors"] == 2
    assert data["run"]["ledger"] is True
    checks = {c["name"]: c for c in data["modes"]["eviction"]["checks"]}
    # both replicas' band counters were read: realtime and async were classified
    assert checks["realtime classified into band 100"]["passed"]
    assert checks["async classified into batch bands"]["passed"]
    assert data["modes"]["eviction"]["figures"]["80"]["generated_tokens"] > 0
