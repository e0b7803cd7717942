"""Failure injection: the deterministic ``X-Return-Error`` header and random injected failures.

``X-Return-Error: <status>[;retry-after=<s>][;times=<n>]`` answers ``status`` (with a
``Retry-After: <s>`` header, copied verbatim) to the first ``n`` attempts of the same request,
then lets it through; without ``times`` every attempt fails. Attempts are counted per key (the
``x-request-id`` header, else a hash of the body). Random failures follow
``--failure-injection-rate`` (percent) over ``--failure-types``.
"""

from __future__ import annotations

import hashlib
import random
from collections import OrderedDict
from dataclasses import dataclass

from sluiceway.sim.config import FAILURE_TYPES, SimConfig

__all__ = [
    "AttemptLedger",
    "Failure",
    "ReturnError",
    "attempt_key",
    "header_failure",
    "parse_return_error",
    "pick_injected_failure",
]

_MESSAGES: dict[str, tuple[str, str]] = {
    "rate_limit": ("Rate limit reached for the simulated model.", "RateLimitError"),
    "invalid_api_key": ("Incorrect API key provided.", "AuthenticationError"),
    "context_length": ("This model's maximum context length was exceeded.", "BadRequestError"),
    "server_error": ("The server is overloaded or not ready yet.", "ServiceUnavailableError"),
    "invalid_request": ("Invalid request (injected failure).", "BadRequestError"),
    "model_not_found": ("The model does not exist (injected failure).", "NotFoundError"),
}


@dataclass(frozen=True, slots=True)
class ReturnError:
    """A parsed ``X-Return-Error`` header. ``times`` None means every attempt fails."""

    status: int
    retry_after: str | None = None
    times: int | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """An error answer to send instead of serving the request."""

    status: int
    message: str
    type: str
    retry_after: str | None = None


def parse_return_error(value: str) -> ReturnError:
    """Parse the header; raises ValueError with a reason when it is malformed."""
    head, *params = (part.strip() for part in value.split(";"))
    if not head.isdigit() or not 100 <= int(head) <= 599:
        raise ValueError(f"status must be an HTTP status code, got {head!r}")
    retry_after: str | None = None
    times: int | None = None
    for param in params:
        name, _, raw = (p.strip() for p in param.partition("="))
        if name.lower() == "retry-after" and raw:
            retry_after = raw
        elif name.lower() == "times" and raw.isdigit():
            times = int(raw)
        else:
            raise ValueError(f"unknown or empty parameter {param!r}")
    return ReturnError(int(head), retry_after, times)


def attempt_key(request_id: str | None, body: bytes) -> str:
    """What identifies 'the same request' across retries."""
    if request_id:
        return "id:" + request_id
    return "body:" + hashlib.blake2b(body, digest_size=16).hexdigest()


class AttemptLedger:
    """Attempts seen per key (bounded; the oldest keys are forgotten first)."""

    def __init__(self, capacity: int = 100_000) -> None:
        self._capacity = capacity
        self._counts: OrderedDict[str, int] = OrderedDict()

    def fails(self, key: str, spec: ReturnError) -> bool:
        """Count one attempt of ``key``; True while it is among the first ``spec.times``."""
        count = self._counts.pop(key, 0) + 1
        self._counts[key] = count
        if len(self._counts) > self._capacity:
            self._counts.popitem(last=False)
        return spec.times is None or count <= spec.times


def header_failure(spec: ReturnError) -> Failure:
    """The answer for a failing ``X-Return-Error`` attempt."""
    kind = {429: "rate_limit", 401: "invalid_api_key", 503: "server_error", 404: "model_not_found"}
    message, err_type = _MESSAGES.get(kind.get(spec.status, ""), (_generic(spec.status), ""))
    return Failure(spec.status, message, err_type or _generic_type(spec.status), spec.retry_after)


def pick_injected_failure(config: SimConfig, rng: random.Random) -> Failure | None:
    """A random failure with probability ``failure_injection_rate`` percent, else None."""
    if config.failure_injection_rate <= 0 or rng.random() * 100 >= config.failure_injection_rate:
        return None
    kind = rng.choice(config.failure_types or tuple(FAILURE_TYPES))
    message, err_type = _MESSAGES[kind]
    return Failure(FAILURE_TYPES[kind], message, err_type, config.failure_retry_after)


def _generic(status: int) -> str:
    return f"Simulated error {status} (X-Return-Error)."


def _generic_type(status: int) -> str:
    if status >= 500:
        return "InternalServerError"
    return "BadRequestError"
