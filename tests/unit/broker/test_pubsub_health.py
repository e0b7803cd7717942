"""Readiness from a consumer's RPCs."""

from __future__ import annotations

from sluiceway.broker.pubsub_health import RpcHealth, Standing


def test_nothing_recorded_asks_for_a_probe() -> None:
    assert RpcHealth().standing(100.0) is Standing.UNKNOWN


def test_a_recent_failure_after_the_last_success_is_failing() -> None:
    health = RpcHealth(window=30)
    health.succeeded(10.0)
    health.failed(20.0, "NotFound")
    assert health.standing(25.0) is Standing.FAILING
    health.succeeded(26.0)
    assert health.standing(27.0) is Standing.HEALTHY


def test_old_news_asks_for_a_probe() -> None:
    health = RpcHealth(window=30)
    health.failed(0.0, "x")
    assert health.standing(31.0) is Standing.UNKNOWN
    health.succeeded(40.0)
    assert health.standing(71.0) is Standing.UNKNOWN
