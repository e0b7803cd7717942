"""The status report: pools sum their queues' claims; deadlines read relative to now."""

from __future__ import annotations

from rich.console import Console

from sluiceway.broker.inspect import QueueCounts
from sluiceway.status import PoolRow, build_report, render_table


def test_pools_count_the_claims_of_their_queues() -> None:
    counts = [QueueCounts("a", 1, 2, 0, 0, 110.0), QueueCounts("b", 0, 3, 1, 2, None)]
    report = build_report(counts, {"gpu": (4, ["a", "b"]), "cpu": (2, [])}, now=100.0)
    assert report.pools == (PoolRow("gpu", 4, 5), PoolRow("cpu", 2, 0))
    assert report.as_json()["queues"][1] == {
        "queue": "b", "pending": 0, "claimed": 3, "retrying": 1, "invalid": 2,
        "oldest_deadline": None,
    }  # fmt: skip


def test_the_table_says_in_how_long_or_how_late() -> None:
    counts = [QueueCounts("soon", 1, 0, 0, 0, 130.0), QueueCounts("late", 1, 0, 0, 0, 90.0)]
    console = Console(width=100, record=True)
    console.print(render_table(build_report(counts, {"p": (8, ["soon"])}, now=100.0)))
    text = console.export_text()
    assert "in 30s" in text and "PAST by 10s" in text and "pool p (8 workers)" in text
