"""Failover: a model server that fails before the response starts is replaced by another.

A connection that fails before the client has had a byte (connect refused or reset, the server
gone, an answer cut before it was whole) is retried on another healthy endpoint serving the
request's model, at most ``retries`` times and never past the upstream deadline. The request
keeps its flow-control slot; only the pool's per-endpoint counts move from the failed endpoint
to the new one. The same endpoint is tried again only when no other may serve the model and it
is still healthy (a keep-alive connection the server had just closed fails that way too).

Nothing is retried once the client has the response head: a stream cut after that ends with
the error event, and a timeout is not retried (the request's time is spent).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import aiohttp

from sluiceway.clock import Clock
from sluiceway.router.exchange import Exchange
from sluiceway.router.metrics import RouterMetrics
from sluiceway.router.pool import EndpointPool, PoolMember

__all__ = ["Failover", "RetryBudget", "retryable"]

log = logging.getLogger(__name__)

_LEAST_WALL = 0.001

# The connection failed, not the request: another endpoint may well answer it.
_CONNECTION_FAILURES = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, ConnectionError)


def retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a connection failure another endpoint may not share (a timeout is
    not: the time it used is gone)."""
    return isinstance(exc, _CONNECTION_FAILURES) and not isinstance(exc, TimeoutError)


@dataclass(slots=True)
class RetryBudget:
    """One request's retries: how many are left, until when (monotonic scaled seconds; None:
    no deadline), and the endpoints already tried."""

    left: int
    deadline: float | None
    tried: set[str] = field(default_factory=set)

    def allows(self, exc: BaseException, ex: Exchange, now: float) -> bool:
        """A retry is allowed: nothing reached the client, it is still there, the failure was
        the connection's, and retries and time are left."""
        in_time = self.deadline is None or now < self.deadline
        fresh = not ex.started and not ex.interrupted
        return fresh and self.left > 0 and in_time and retryable(exc)

    def remaining(self, now: float) -> float | None:
        """Scaled seconds left for the next attempt (None: no limit)."""
        return None if self.deadline is None else max(0.0, self.deadline - now)


class Failover:
    """Moves a request whose endpoint failed to another one, and counts and logs it."""

    def __init__(
        self, pool: EndpointPool, metrics: RouterMetrics, clock: Clock, *, retries: int
    ) -> None:
        self.pool = pool
        self.metrics = metrics
        self.clock = clock
        self.retries = retries

    def budget(self, timeout: float) -> RetryBudget:
        """The budget of a request whose upstream calls may take ``timeout`` scaled seconds in
        all (0: no limit), from now."""
        deadline = self.clock.monotonic() + timeout if timeout > 0 else None
        return RetryBudget(self.retries, deadline)

    def limit(self, budget: RetryBudget) -> aiohttp.ClientTimeout:
        """The next attempt's timeout: what is left of the budget's time (at least a
        millisecond: aiohttp reads a total of 0 as no limit)."""
        left = budget.remaining(self.clock.monotonic())
        if left is None:
            return aiohttp.ClientTimeout(total=None)
        return aiohttp.ClientTimeout(total=max(_LEAST_WALL, self.clock.to_wall(left)))

    def replace(
        self, ex: Exchange, failed: PoolMember, exc: BaseException, budget: RetryBudget
    ) -> PoolMember | None:
        """Another endpoint for ``ex`` after ``failed`` failed with ``exc`` (``ex.member`` and
        the pool's counts moved to it), or None when the failure stands."""
        if not budget.allows(exc, ex, self.clock.monotonic()):
            return None
        budget.tried.add(failed.url)
        member = self.pool.pick(ex.prefix, ex.model, avoid=budget.tried)
        if member is None:
            member = self.pool.pick(ex.prefix, ex.model)
        if member is None:
            return None
        budget.left -= 1
        self.pool.release(failed, ex.tokens)
        self.pool.acquire(member, ex.tokens)
        ex.member = member
        self.metrics.upstream_retried()
        log.warning(
            "upstream %s failed before the response (%s: %s): retrying on %s, %d retries left",
            failed.url,
            type(exc).__name__,
            exc,
            member.url,
            budget.left,
        )
        return member
