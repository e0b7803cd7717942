"""Retry-set members counted per origin queue, for ``sluiceway status``."""

from __future__ import annotations

import json

from sluiceway.broker.inspect import QueueCounts, count_retries


def member(queue: str) -> str:
    internal = {"request_queue_name": queue} if queue else {}
    return json.dumps({"internal": internal, "data": {"id": "x", "deadline": 10.0}})


def test_retries_count_under_their_origin_queue_and_unreadable_ones_are_left_out() -> None:
    counts = count_retries([member("a"), member("a"), member("b"), member(""), "{broken"])
    assert counts == {"a": 2, "b": 1}
    assert counts["never"] == 0


def test_queue_counts_are_plain_values() -> None:
    row = QueueCounts("q", pending=1, claimed=2, retrying=3, invalid=4, oldest_deadline=None)
    assert (row.pending, row.claimed, row.retrying, row.invalid) == (1, 2, 3, 4)
