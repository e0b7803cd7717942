"""What the subscription feed decides without a service: long backoffs and ack deadlines."""

from __future__ import annotations

from sluiceway.broker.pubsub_feed import split_deferred


def test_a_backoff_beyond_one_ack_deadline_is_extended_until_the_rest_fits() -> None:
    final, extend = split_deferred({"near": 1000.0 + 590, "far": 1000.0 + 900}, 1000.0)
    assert final == [("near", 590)] and extend == ["far"]
    final, extend = split_deferred({"late": 999.0}, 1000.0)
    assert final == [("late", 0)] and extend == []
