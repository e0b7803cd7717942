"""The peek orders as the backends read them: which way, the SQL order and the Redis bounds.
Every broker's behaviour under both orders is in ``tests/brokers/peek_order_conformance.py``."""

from __future__ import annotations

from sluiceway.broker.peek_order import EARLIEST_DEADLINE, LATEST_DEADLINE, PeekOrder


def test_the_default_reads_ascending_and_the_other_is_its_reverse() -> None:
    assert list(PeekOrder) == [EARLIEST_DEADLINE, LATEST_DEADLINE]
    assert not EARLIEST_DEADLINE.reverse and LATEST_DEADLINE.reverse
    assert EARLIEST_DEADLINE.sql == "score, member"
    assert LATEST_DEADLINE.sql == "score DESC, member DESC"  # ties reversed too


def test_a_reverse_range_names_its_highest_bound_first() -> None:
    assert EARLIEST_DEADLINE.span("-inf", "+inf") == ("-inf", "+inf")
    assert LATEST_DEADLINE.span("-inf", "+inf") == ("+inf", "-inf")


def test_the_values_name_the_orders_in_metrics() -> None:
    assert [o.value for o in PeekOrder] == ["earliest_deadline", "latest_deadline"]
