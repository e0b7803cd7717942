from __future__ import annotations

import orjson
import pytest

from sluiceway.flowcontrol.base import Finalized, Outcome
from sluiceway.router.outcomes import (
    EVICTED_EVENT,
    UPSTREAM_CUT_EVENT,
    evicted_answer,
    finalized_answer,
    method_not_allowed,
    shutting_down,
    upstream_failed,
)


def _fin(outcome: Outcome, **kw: bool) -> Finalized:
    return Finalized("r", outcome, "t", 0, 0, 0.0, **kw)


@pytest.mark.parametrize(
    ("outcome", "flags", "status", "reason"),
    [
        (Outcome.REJECTED_CAPACITY, {}, 429, "rejected-saturated"),
        (Outcome.REJECTED_NO_ENDPOINTS, {}, 503, "rejected-no-endpoints"),
        (Outcome.EVICTED_TTL, {}, 429, "rejected-ttl-expired"),
        (Outcome.EVICTED_TTL, {"pool_empty": True}, 503, "rejected-no-endpoints"),
        (Outcome.EVICTED_NO_ENDPOINTS, {}, 503, "rejected-no-endpoints"),
        (Outcome.EVICTED_CONTEXT_CANCELLED, {}, 503, "rejected-context-cancelled"),
        (Outcome.EVICTED_OTHER, {"shutting_down": True}, 503, "rejected-shutting-down"),
        (Outcome.REJECTED_OTHER, {}, 500, None),
    ],
)
def test_outcome_table(
    outcome: Outcome, flags: dict[str, bool], status: int, reason: str | None
) -> None:
    answer = finalized_answer(_fin(outcome, **flags))
    headers = dict(answer.headers)
    assert answer.status == status
    assert headers.get("x-llm-d-request-dropped-reason") == reason
    error = orjson.loads(answer.body)["error"]
    assert set(error) == {"message", "type", "code"} and error["code"] == status


def test_eviction_keeps_the_literal_body() -> None:
    answer = evicted_answer()
    assert (answer.status, answer.body) == (429, b"request evicted by flow control")
    assert ("x-llm-d-request-dropped-reason", "evicted") in answer.headers
    assert shutting_down().status == 503


def test_an_eviction_mid_stream_ends_with_a_rate_limit_error_coded_evicted() -> None:
    assert EVICTED_EVENT.startswith(b"data: ") and EVICTED_EVENT.endswith(b"\n\n")
    error = orjson.loads(EVICTED_EVENT[len(b"data: ") :])["error"]
    assert error == {
        "message": "request evicted by flow control",
        "type": "RateLimitError",
        "code": "evicted",
    }


def test_upstream_failures_name_no_server() -> None:
    answer = upstream_failed()
    error = orjson.loads(answer.body)["error"]
    assert answer.status == 502 and error["code"] == 502
    assert "127.0.0.1" not in error["message"] and "http" not in error["message"]
    assert UPSTREAM_CUT_EVENT.startswith(b"data: ") and UPSTREAM_CUT_EVENT.endswith(b"\n\n")
    event = orjson.loads(UPSTREAM_CUT_EVENT[len(b"data: ") :])
    assert set(event["error"]) == {"message", "type", "code"} and event["error"]["code"] == 502


def test_method_not_allowed_says_what_is() -> None:
    answer = method_not_allowed("POST", "/healthz", ("GET", "HEAD"))
    assert answer.status == 405 and ("allow", "GET, HEAD") in answer.headers
