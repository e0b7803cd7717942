"""The facts the gateway adds to the current record: identity, admission, upstream attempts,
and at the end the tokens and how an unfinished request ended."""

from __future__ import annotations

import time

from sluiceway.flowcontrol.base import Usage
from sluiceway.observability.served_request import ServedRequest
from sluiceway.router import current_request
from sluiceway.router.current_request import CURRENT, CurrentRequest, settle
from sluiceway.router.exchange import Exchange
from sluiceway.router.identity import Identity
from sluiceway.router.pool import PoolMember

IDENT = Identity(
    objective="gold", fairness_id="team-a", ttl=None, slo_ttft_ms=None, request_id=None
)


def _record() -> ServedRequest:
    return ServedRequest.open("router", "POST", "/v1/completions", "/v1/completions")


def test_hooks_fill_the_current_record() -> None:
    record = _record()
    current = CurrentRequest(record)
    ex = Exchange("17", model="m")
    token = CURRENT.set(current)
    try:
        current_request.identified(ex, IDENT, 40)
        ex.member, ex.dispatched_at = PoolMember("http://a:8000"), time.perf_counter()
        current_request.admitted(ex)
        headers: dict[str, str] = {}
        current_request.upstream(headers, "http://a:8000")
        first = record.upstream_at
        current_request.upstream(headers, "http://b:8000")  # failover: the next endpoint
    finally:
        CURRENT.reset(token)
    assert (record.tenant, record.objective, record.priority, record.model) == (
        "team-a",
        "gold",
        40,
        "m",
    )
    assert record.request_id == "17"  # the router's own id until the answer names one
    assert record.queued_at <= record.dispatched_at <= record.admitted_at
    assert record.upstream_at == first > 0
    assert record.endpoint == "http://b:8000"
    assert headers == {}  # not traced: nothing injected
    assert current.exchange is ex
    ex.usage, ex.started, ex.complete = Usage(5, 9), True, True
    settle(current)
    assert (record.prompt_tokens, record.completion_tokens, record.reason) == (5, 9, "")


def test_how_an_unfinished_request_ended() -> None:
    for flags, reason in [
        ({"evicted": True, "started": True}, "evicted"),
        ({"disconnected": True}, "cancelled"),
        ({"started": True}, "incomplete"),
    ]:
        current, ex = CurrentRequest(_record()), Exchange("1")
        token = CURRENT.set(current)
        current_request.identified(ex, IDENT, 0)
        CURRENT.reset(token)
        for name, value in flags.items():
            setattr(ex, name, value)
        settle(current)
        assert current.record.reason == reason


def test_nothing_happens_without_a_current_record() -> None:
    ex = Exchange("1")
    current_request.identified(ex, IDENT, 0)
    current_request.admitted(ex)
    headers: dict[str, str] = {}
    current_request.upstream(headers, "http://a:8000")
    assert headers == {} and CURRENT.get() is None
