"""``report.json`` and ``summary.html`` from a report built by hand: the shape other tools read,
an invalid mode saying why, plots of the honest figures, every check in the table."""

from __future__ import annotations

import json
from pathlib import Path

from sluiceway.bench.isolation.checks import ValidatorCheck
from sluiceway.bench.isolation.report import write_report
from sluiceway.bench.isolation.result import IsolationReport, ModeResult

REASON = "machine too busy: event-loop lag p99 (scaled) 44.0 ms, bound 30 ms"


def _report() -> IsolationReport:
    best = ModeResult(
        True,
        [ValidatorCheck("L80 ttft p90", True, 0.085, 0.41)],
        {"80": {"ttft_p90_ratio": 1.18, "goodput_slack_ratio": 0.11, "fate_abandoned_running": 28}},
        {"async_goodput_per_s": 4.57, "fate_arrivals": 100.0},
    )
    busy = ModeResult(
        False,
        [ValidatorCheck("L80 ttft p90", False, 2.03, 0.63)],
        {"80": {"ttft_p90_ratio": 2.9, "goodput_slack_ratio": None}},
        invalid_reason=REASON,
    )
    return IsolationReport(modes={"best": best, "eviction": busy}, run={"capacity": 10})


def test_report_json_has_every_mode_with_its_reason(tmp_path: Path) -> None:
    data = json.loads(write_report(_report(), tmp_path).read_text())
    assert set(data) == {"modes", "run"} and data["run"] == {"capacity": 10}
    best, busy = data["modes"]["best"], data["modes"]["eviction"]
    assert (best["valid"], best["invalid_reason"]) == (True, None)
    assert best["async_only"] == {"async_goodput_per_s": 4.57, "fate_arrivals": 100.0}
    assert best["checks"] == [
        {"name": "L80 ttft p90", "passed": True, "observed": 0.085, "bound": 0.41}
    ]
    assert (busy["valid"], busy["invalid_reason"]) == (False, REASON)


def test_the_summary_plots_goodput_and_says_why_a_mode_is_invalid(tmp_path: Path) -> None:
    write_report(_report(), tmp_path)
    page = (tmp_path / "summary.html").read_text()
    assert page.startswith("<!doctype html>")
    for title in ("Async goodput / model-time slack", "abandoned while running"):
        assert title in page
    assert "best L80" in page and ">0.11<" in page and ">n/a<" in page  # None drawn as n/a
    assert "INVALID: machine too busy" in page and "(unjudged: FAIL)" in page
    assert page.count("<tr style=") == 2  # one row per check
