"""What one upstream attempt means: finish with a result, or retry later (pure).

Classes follow llm-d-async's (success, rate limit, invalid request, server error) with one
deliberate change: connection errors and per-attempt timeouts are retried too, while the
deadline allows, with their backoff capped at ``connect_backoff_cap`` (a model server restart
takes minutes and must not fail requests that have time left); ``max_connect_errors`` (opt-in)
caps them in a row. ``max_attempts`` caps all attempts of a request (None = until the deadline,
as upstream).
When retrying is over because of the deadline, the last HTTP answer is the result if there was
one, else ``DEADLINE_EXCEEDED``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sluiceway.processor.results import (
    HttpAnswer,
    deadline_result,
    http_result,
    inference_error_result,
)
from sluiceway.processor.retry import MAX_BACKOFF_SECONDS, plan_retry
from sluiceway.wire import ResultRecord

__all__ = [
    "DEFAULT_CONNECT_BACKOFF_CAP",
    "Attempt",
    "AttemptKind",
    "Category",
    "Finish",
    "Retry",
    "RetryPolicy",
    "Step",
    "categorize",
    "decide",
]


class AttemptKind(StrEnum):
    """How an attempt ended on the wire."""

    HTTP = "http"  # an HTTP answer arrived (any status)
    CONNECT_ERROR = "connect_error"  # refused, reset, DNS, body read failure before a status
    TIMEOUT = "timeout"  # the per-attempt timeout passed


class Category(StrEnum):
    """Outcome class of an attempt (upstream ``error.category`` values plus ``TRANSPORT``)."""

    SUCCESS = "SUCCESS"
    RATE_LIMIT = "RATE_LIMIT"
    INVALID_REQ = "INVALID_REQ"
    SERVER_ERROR = "SERVER_ERROR"
    TRANSPORT = "TRANSPORT"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt's facts. ``retry_after`` in scaled seconds; ``error`` describes failures;
    ``queued``: seconds it waited in the router's flow control (its
    ``x-llm-d-flow-queue-duration-ms``; 0 when not told)."""

    kind: AttemptKind
    answer: HttpAnswer | None = None
    retry_after: float | None = None
    dropped_reason: str = ""
    error: str = ""
    queued: float = 0.0


# Scaled seconds: the longest backoff between attempts that failed to connect, so a model
# server that comes back is used again within about this long.
DEFAULT_CONNECT_BACKOFF_CAP = 10.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Per-queue retry limits (sluiceway's own queue settings): None = unlimited.
    ``connect_backoff_cap``: scaled seconds, the longest backoff after a transport failure."""

    max_attempts: int | None = None
    max_connect_errors: int | None = None
    connect_backoff_cap: float = DEFAULT_CONNECT_BACKOFF_CAP


@dataclass(frozen=True, slots=True)
class Finish:
    """Write ``result``; ``counter`` names the outcome counter to bump."""

    result: ResultRecord
    counter: str  # successful | failed | exceeded_deadline


@dataclass(frozen=True, slots=True)
class Retry:
    """Try again after ``delay`` scaled seconds."""

    delay: float


Step = Finish | Retry


def categorize(attempt: Attempt) -> Category:
    """The outcome class of an attempt."""
    if attempt.answer is None:
        return Category.TRANSPORT
    status = attempt.answer.status
    if status < 400:
        return Category.SUCCESS
    if status == 429:
        return Category.RATE_LIMIT
    if status < 500:
        return Category.INVALID_REQ
    return Category.SERVER_ERROR


def _error_text(attempt: Attempt) -> str:
    text = f"{attempt.error or attempt.kind.value}"
    if attempt.dropped_reason:
        text = f"{text} (dropped: {attempt.dropped_reason})"
    return text


def _terminal(request_id: str, token: str, last: HttpAnswer | None, attempt: Attempt) -> Finish:
    message = f"deadline exceeded: {_error_text(attempt)}"
    return Finish(deadline_result(request_id, token, last, message), "exceeded_deadline")


def _gives_up(attempt: Attempt, *, attempts: int, connect_errors: int, policy: RetryPolicy) -> bool:
    if policy.max_attempts is not None and attempts >= policy.max_attempts:
        return True
    cap = policy.max_connect_errors
    return attempt.answer is None and cap is not None and connect_errors >= cap


def _give_up(request_id: str, token: str, attempt: Attempt) -> Finish:
    if attempt.answer is not None:
        return Finish(http_result(request_id, token, attempt.answer), "failed")
    return Finish(inference_error_result(request_id, token, _error_text(attempt)), "failed")


def decide(
    attempt: Attempt,
    *,
    request_id: str,
    request_token: str,
    attempts: int,
    connect_errors: int,
    last_answer: HttpAnswer | None,
    remaining: float,
    policy: RetryPolicy,
    rand: float,
    jitter: float,
) -> Step:
    """Finish or retry after ``attempt``.

    ``attempts`` counts attempts made so far including this one; ``connect_errors`` the
    consecutive transport failures including this one; ``last_answer`` the most recent HTTP
    answer including this attempt's; ``remaining`` = deadline - now in scaled seconds.
    """
    category = categorize(attempt)
    if category is Category.SUCCESS:
        assert attempt.answer is not None
        return Finish(http_result(request_id, request_token, attempt.answer), "successful")
    if category is Category.INVALID_REQ:
        assert attempt.answer is not None
        return Finish(http_result(request_id, request_token, attempt.answer), "failed")
    if _gives_up(attempt, attempts=attempts, connect_errors=connect_errors, policy=policy):
        return _give_up(request_id, request_token, attempt)
    plan = plan_retry(
        retry_count=attempts - 1,
        remaining=remaining,
        retry_after=attempt.retry_after,
        rand=rand,
        jitter=jitter,
        cap=policy.connect_backoff_cap if category is Category.TRANSPORT else MAX_BACKOFF_SECONDS,
    )
    if plan.terminal:
        return _terminal(request_id, request_token, last_answer, attempt)
    return Retry(plan.delay)
