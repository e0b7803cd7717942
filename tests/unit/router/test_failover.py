"""Failover decisions without a network: what is retried, how often, until when, and where."""

from __future__ import annotations

import aiohttp
import pytest

from sluiceway.clock import VirtualClock
from sluiceway.router.exchange import Exchange
from sluiceway.router.failover import Failover, RetryBudget, retryable
from sluiceway.router.metrics import RouterMetrics
from sluiceway.router.pool import EndpointPool
from sluiceway.router.proxy import StreamCut

REFUSED = aiohttp.ClientConnectorError(
    aiohttp.client_reqrep.ConnectionKey("h", 1, False, True, None, None, None),
    OSError(111, "refused"),
)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (REFUSED, True),
        (aiohttp.ServerDisconnectedError(), True),
        (aiohttp.ClientOSError(104, "reset"), True),
        (aiohttp.ClientPayloadError("cut"), True),
        (ConnectionResetError(), True),
        (TimeoutError(), False),
        (aiohttp.ServerTimeoutError(), False),  # a timeout, though a connection error too
        (StreamCut("no [DONE]"), False),
        (ValueError("a bug"), False),
    ],
)
def test_only_connection_failures_are_retried(exc: BaseException, expected: bool) -> None:
    assert retryable(exc) is expected


def test_a_budget_allows_a_retry_only_before_the_first_byte_and_in_time() -> None:
    budget = RetryBudget(left=1, deadline=10.0)
    fresh = Exchange("1")
    assert budget.allows(REFUSED, fresh, now=9.0)
    assert not budget.allows(REFUSED, fresh, now=10.0)  # the request's time is spent
    assert not budget.allows(REFUSED, Exchange("2", started=True), now=0.0)
    assert not budget.allows(REFUSED, Exchange("3", disconnected=True), now=0.0)
    assert not RetryBudget(left=0, deadline=None).allows(REFUSED, fresh, now=0.0)
    assert budget.remaining(4.0) == 6.0 and RetryBudget(1, None).remaining(4.0) is None


def _failover(retries: int = 2) -> tuple[Failover, EndpointPool, RouterMetrics, VirtualClock]:
    clock = VirtualClock()
    pool = EndpointPool(["http://a", "http://b", "http://c"], clock)
    for url in pool.members:
        pool.mark(url, True)
        pool.set_models(url, frozenset({"m"}))
    pool.set_models("http://c", frozenset({"other"}))
    metrics = RouterMetrics("p")
    return Failover(pool, metrics, clock, retries=retries), pool, metrics, clock


def _retries(metrics: RouterMetrics) -> float | None:
    return metrics.registry.get_sample_value(
        "sluiceway_router_upstream_retries_total", {"inference_pool": "p"}
    )


def test_a_failed_request_moves_to_another_endpoint_serving_its_model() -> None:
    failover, pool, metrics, _ = _failover()
    a, b = pool.members["http://a"], pool.members["http://b"]
    ex = Exchange("1", member=a, tokens=30, model="m")
    pool.acquire(a, 30)
    budget = failover.budget(0)
    assert failover.replace(ex, a, REFUSED, budget) is b
    assert ex.member is b and (a.inflight, a.inflight_tokens) == (0, 0)
    assert (b.inflight, b.inflight_tokens) == (1, 30)
    assert budget.left == 1 and _retries(metrics) == 1
    # b fails too: a is the only other one serving m (c does not)
    assert failover.replace(ex, b, aiohttp.ServerDisconnectedError(), budget) is a
    assert budget.left == 0 and failover.replace(ex, a, REFUSED, budget) is None
    assert ex.member is a and a.inflight == 1 and _retries(metrics) == 2


def test_the_same_endpoint_again_only_when_no_other_serves_the_model() -> None:
    failover, pool, _, _ = _failover()
    c = pool.members["http://c"]
    ex = Exchange("1", member=c, model="other")
    pool.acquire(c, 0)
    budget = failover.budget(0)
    assert failover.replace(ex, c, aiohttp.ServerDisconnectedError(), budget) is c
    pool.mark("http://c", False)  # refused: out of the pool
    assert failover.replace(ex, c, REFUSED, budget) is None
    assert c.inflight == 1  # still counted against the endpoint it failed on


def test_no_retry_past_the_deadline_or_once_started() -> None:
    failover, pool, metrics, clock = _failover()
    a = pool.members["http://a"]
    ex = Exchange("1", member=a, model="m")
    budget = failover.budget(5.0)
    assert failover.limit(budget).total == 5.0
    clock.advance(5.0)
    assert failover.replace(ex, a, REFUSED, budget) is None
    ex.started = True
    assert failover.replace(ex, a, REFUSED, failover.budget(0)) is None
    assert failover.limit(failover.budget(0)).total is None and _retries(metrics) == 0


def test_an_attempt_with_almost_no_time_left_still_has_a_limit() -> None:
    failover, _, _, clock = _failover()
    budget = failover.budget(5.0)
    clock.advance(5.0)  # aiohttp would take a total of 0 for no limit at all
    assert failover.limit(budget).total == 0.001
