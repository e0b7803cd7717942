"""The six lanes and the unknown-tier rule."""

from __future__ import annotations

import pytest

from sluiceway.wire import LANES, lane_by_key, lane_for


def test_lane_table_is_pinned() -> None:
    assert [(lane.index, lane.key, lane.guide_priority) for lane in LANES] == [
        (0, "reserved-interactive", 100),
        (1, "reserved-async", 60),
        (2, "reserved-batch", 30),
        (3, "overflow-interactive", 10),
        (4, "overflow-async", -5),
        (5, "overflow-batch", -10),
    ]


@pytest.mark.parametrize(
    ("classification", "tier", "index"),
    [
        ("reserved", "interactive", 0),
        ("reserved", "async", 1),
        ("reserved", "batch", 2),
        ("reserved", None, 2),
        ("reserved", "gold", 2),
        ("overflow", "interactive", 3),
        (None, "interactive", 3),
        ("", "async", 4),
        ("overflow", "batch", 5),
        (None, None, 5),
        ("weird", "unknown", 5),
    ],
)
def test_lane_for(classification: str | None, tier: str | None, index: int) -> None:
    assert lane_for(classification, tier).index == index


def test_lane_by_key() -> None:
    assert lane_by_key("overflow-async") is LANES[4]
    assert lane_by_key("nope") is None
