"""The demo's pure parts: what it computes from the model server's events and how it tabulates
them (the end-to-end runs are in test_demo.py)."""

from __future__ import annotations

import math

from sluiceway.clock import RealClock
from sluiceway.demo.findings import Findings, StepReport, nearest_rank
from sluiceway.demo.observe import Event, Timeline, lane_occupancy, lane_peaks
from sluiceway.demo.stack import router_document
from sluiceway.demo.steps_quota import lane_rows
from sluiceway.demo.tables import check_grid, findings_grids


def ev(at: float, delta: int, lane: str, request: str = "") -> Event:
    return Event(at, delta, lane, "t", request)


def test_percentile_is_nearest_rank() -> None:
    values = [0.1 * i for i in range(1, 11)]
    assert nearest_rank(values, 50) == values[4]
    assert nearest_rank(values, 90) == values[8]
    assert nearest_rank([3.0], 90) == 3.0
    assert math.isnan(nearest_rank([], 50))


def test_peaks_and_occupancy_follow_starts_and_ends() -> None:
    events = [ev(0, 1, "a"), ev(1, 1, "a"), ev(2, 1, "b"), ev(3, -1, "a"), ev(4, 1, "a")]
    assert lane_peaks(events) == {"a": 2, "b": 1}
    assert lane_occupancy(events)[-2] == (3, {"a": 1, "b": 1})


def test_restarted_requests_and_time_weighted_average() -> None:
    timeline = Timeline(RealClock())
    timeline.events = [
        ev(0, 1, "overflow-batch", "r1"),
        ev(1, -1, "overflow-batch", "r1"),
        ev(1, 1, "overflow-batch", "r1"),
        ev(2, 1, "reserved-batch", "r2"),
        ev(3, -1, "overflow-batch", "r1"),
        ev(4, -1, "reserved-batch", "r2"),
    ]
    assert timeline.restarted() == {"r1": ["overflow-batch", "overflow-batch"]}
    # 1 running over [0, 2), 2 over [2, 3), 1 over [3, 4)
    assert timeline.average_running(0, 4) == (2 + 2 + 1) / 4


def test_lane_rows_in_band_order_with_the_order_lanes_emptied() -> None:
    events = [
        ev(0.5, 1, "overflow-batch"),
        ev(0.1, 1, "reserved-interactive"),
        ev(0.3, -1, "reserved-interactive"),
        ev(2.0, -1, "overflow-batch"),
    ]
    rows = lane_rows(sorted(events, key=lambda e: e.at))
    assert [(r.lane, r.count, r.done_rank) for r in rows] == [
        ("reserved-interactive", 1, 1),
        ("overflow-batch", 1, 2),
    ]


def test_tables_carry_checks_and_thin_the_quota_samples() -> None:
    report = StepReport("B", "title")
    report.check("held", True, 1)
    report.check("missed", False, "why")
    assert not report.passed
    assert [row[1] for row in check_grid(report).rows] == ["yes", "NO"]
    findings = Findings(quota=[(i / 10, {"batch": i % 2}) for i in range(100)])
    (quota,) = findings_grids(findings)
    assert 12 <= len(quota.rows) <= 14
    assert quota.rows[-1][0] == "9.9"


def test_an_empty_report_does_not_pass() -> None:
    assert not StepReport("X", "nothing checked").passed


def test_router_document_changes_the_guide_values() -> None:
    doc = router_document("router-evictable.yaml", maxConcurrency=4, enableEviction=False)
    (detector,) = [p for p in doc["plugins"] if p["type"] == "concurrency-detector"]
    assert detector["parameters"]["maxConcurrency"] == 4
    assert doc["flowControl"]["enableEviction"] is False
    assert len(doc["flowControl"]["priorityBands"]) == 6
