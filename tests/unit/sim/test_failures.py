"""X-Return-Error parsing and attempt counting; random injected failures."""

from __future__ import annotations

import random

import pytest

from sluiceway.sim import SimConfig
from sluiceway.sim.failures import (
    AttemptLedger,
    ReturnError,
    attempt_key,
    header_failure,
    parse_return_error,
    pick_injected_failure,
)


def test_header_parsing() -> None:
    assert parse_return_error("429") == ReturnError(429)
    assert parse_return_error("503; retry-after=7 ;times=2") == ReturnError(503, "7", 2)
    assert parse_return_error("500;Retry-After=0.25") == ReturnError(500, "0.25")
    for bad in ("abc", "99", "429;times=x", "429;colour=blue", "429;retry-after="):
        with pytest.raises(ValueError):
            parse_return_error(bad)


def test_ledger_fails_the_first_n_attempts_per_key() -> None:
    ledger = AttemptLedger()
    spec = ReturnError(429, times=2)
    assert [ledger.fails("k", spec) for _ in range(4)] == [True, True, False, False]
    assert ledger.fails("other", spec)
    assert all(ledger.fails("always", ReturnError(500)) for _ in range(5))


def test_ledger_forgets_the_oldest_keys_beyond_capacity() -> None:
    ledger = AttemptLedger(capacity=2)
    spec = ReturnError(429, times=1)
    for key in ("a", "b", "c"):
        ledger.fails(key, spec)
    assert ledger.fails("a", spec)  # forgotten: counted as a first attempt again
    assert not ledger.fails("c", spec)


def test_attempt_key_prefers_the_request_id() -> None:
    assert attempt_key("r1", b"x") == attempt_key("r1", b"y")
    assert attempt_key(None, b"x") == attempt_key("", b"x") != attempt_key(None, b"y")


def test_header_failure_carries_retry_after_verbatim() -> None:
    failure = header_failure(ReturnError(429, "3"))
    assert (failure.status, failure.retry_after, failure.type) == (429, "3", "RateLimitError")
    assert header_failure(ReturnError(418)).status == 418


def test_injected_failures_follow_rate_and_types() -> None:
    rng = random.Random(1)
    never = SimConfig(failure_injection_rate=0)
    assert all(pick_injected_failure(never, rng) is None for _ in range(100))
    always = SimConfig(
        failure_injection_rate=100, failure_types=("server_error",), failure_retry_after="4"
    )
    failure = pick_injected_failure(always, rng)
    assert failure is not None and (failure.status, failure.retry_after) == (503, "4")
    half = SimConfig(failure_injection_rate=50)
    hits = sum(pick_injected_failure(half, rng) is not None for _ in range(2000))
    assert 850 < hits < 1150
