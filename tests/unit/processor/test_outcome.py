"""Outcome classes, retry caps and the last-HTTP-answer rule."""

from __future__ import annotations

import json

from sluiceway.processor.outcome import (
    Attempt,
    AttemptKind,
    Category,
    Finish,
    Retry,
    RetryPolicy,
    categorize,
    decide,
)
from sluiceway.processor.results import HttpAnswer


def http(status: int, body: str = "b", retry_after: float | None = None) -> Attempt:
    return Attempt(AttemptKind.HTTP, HttpAnswer(status, body), retry_after=retry_after)


REFUSED = Attempt(AttemptKind.CONNECT_ERROR, error="connection refused")


def run(attempt: Attempt, **kw: object) -> Finish | Retry:
    args: dict[str, object] = {
        "request_id": "r1",
        "request_token": "t" * 32,
        "attempts": 1,
        "connect_errors": 0,
        "last_answer": attempt.answer,
        "remaining": 300.0,
        "policy": RetryPolicy(),
        "rand": 0.0,
        "jitter": 0.0,
    }
    args.update(kw)
    return decide(attempt, **args)  # type: ignore[arg-type]


def test_categories() -> None:
    assert categorize(http(200)) is Category.SUCCESS
    assert categorize(http(302)) is Category.SUCCESS
    assert categorize(http(429)) is Category.RATE_LIMIT
    assert categorize(http(404)) is Category.INVALID_REQ
    assert categorize(http(503)) is Category.SERVER_ERROR
    assert categorize(REFUSED) is Category.TRANSPORT
    assert categorize(Attempt(AttemptKind.TIMEOUT)) is Category.TRANSPORT


def test_success_and_client_errors_finish_with_the_http_answer() -> None:
    ok = run(http(200, "yes"))
    assert isinstance(ok, Finish) and ok.counter == "successful"
    assert (ok.result.status_code, ok.result.payload, ok.result.request_token) == (
        200,
        "yes",
        "t" * 32,
    )
    bad = run(http(400, "no"))
    assert isinstance(bad, Finish) and bad.counter == "failed" and bad.result.status_code == 400


def test_429_5xx_and_transport_errors_are_retried() -> None:
    for attempt in (http(429), http(503), REFUSED, Attempt(AttemptKind.TIMEOUT)):
        step = run(attempt, connect_errors=1 if attempt.answer is None else 0)
        assert isinstance(step, Retry) and 2.0 <= step.delay < 4.0


def test_retry_after_from_a_503_is_honoured() -> None:
    step = run(http(503, retry_after=9.0))
    assert isinstance(step, Retry) and step.delay == 9.0


def test_connect_errors_stop_at_the_cap() -> None:
    policy = RetryPolicy(max_connect_errors=3)
    assert isinstance(run(REFUSED, connect_errors=2, policy=policy), Retry)
    final = run(REFUSED, connect_errors=3, policy=policy)
    assert isinstance(final, Finish) and final.result.error_code == "INFERENCE_ERROR"
    assert "connection refused" in final.result.error_message


def test_max_attempts_ends_with_the_last_answer() -> None:
    final = run(http(503, "busy"), attempts=4, policy=RetryPolicy(max_attempts=4))
    assert isinstance(final, Finish) and final.result.status_code == 503
    assert final.counter == "failed"


def test_deadline_returns_the_last_http_answer() -> None:
    final = run(REFUSED, remaining=0.0, connect_errors=1, last_answer=HttpAnswer(429, "full"))
    assert isinstance(final, Finish) and final.counter == "exceeded_deadline"
    assert (final.result.status_code, final.result.payload) == (429, "full")


def test_deadline_without_any_answer_is_deadline_exceeded() -> None:
    final = run(REFUSED, remaining=0.0, connect_errors=1, last_answer=None)
    assert isinstance(final, Finish) and final.result.error_code == "DEADLINE_EXCEEDED"
    assert json.loads(final.result.payload)["error"].startswith("deadline exceeded")


def test_dropped_reason_is_recorded() -> None:
    attempt = Attempt(AttemptKind.HTTP, HttpAnswer(429, "x"), dropped_reason="rejected-saturated")
    refused = Attempt(AttemptKind.CONNECT_ERROR, error="reset", dropped_reason="evicted")
    final = run(refused, connect_errors=5, policy=RetryPolicy(max_connect_errors=5))
    assert isinstance(final, Finish) and "(dropped: evicted)" in final.result.error_message
    assert isinstance(run(attempt), Retry)


def test_connection_errors_retry_while_the_deadline_allows_with_a_capped_backoff() -> None:
    many = run(REFUSED, attempts=40, connect_errors=40, remaining=600.0, rand=0.999)
    assert isinstance(many, Retry) and 5.0 <= many.delay < 10.0
    answered = run(http(503), attempts=40, remaining=600.0, rand=0.999)
    assert isinstance(answered, Retry) and answered.delay > 10.0  # HTTP errors keep the 60 s cap
    short_cap = run(
        REFUSED, attempts=40, connect_errors=40, policy=RetryPolicy(connect_backoff_cap=2)
    )
    assert isinstance(short_cap, Retry) and short_cap.delay < 2.0
