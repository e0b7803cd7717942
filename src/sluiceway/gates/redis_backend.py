"""The seam between the Redis-backed gates and Redis: protocols only (the implementation is
:mod:`sluiceway.broker.redis_gates`, handed to builders as ``services["redis_gates"]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, cast

from sluiceway.errors import ConfigError
from sluiceway.gates.context import REDIS_GATES_SERVICE, GateContext
from sluiceway.signals.base import MetricSource

__all__ = ["REDIS_GATES_SERVICE", "LeasedRateStore", "RedisGateBackend", "redis_backend"]


class LeasedRateStore(Protocol):
    """One pool's leased token bucket. Failures raise :class:`~sluiceway.errors.BrokerError`."""

    @property
    def key(self) -> str:
        """Identifies the control key (sources over one key share a refresher)."""
        ...

    async def control(self) -> Mapping[str, str]:
        """The control hash as the controller wrote it (empty when absent)."""
        ...

    async def take(self, now_ms: int) -> tuple[bool, str]:
        """Validate the lease at ``now_ms`` (unscaled wall ms) and take one token, atomically.
        Returns (taken, reason)."""
        ...


class RedisGateBackend(Protocol):
    """Redis access for gates, one connection per distinct ``address``."""

    def budget_key(self, address: str, key: str) -> MetricSource:
        """A source reading the budget STRING at ``key`` (missing or unparsable: 1.0)."""
        ...

    def leased_rate(
        self, address: str, *, control_key: str, state_key: str, pool_id: str, burst: float
    ) -> LeasedRateStore: ...


def redis_backend(ctx: GateContext, gate_type: str) -> RedisGateBackend:
    backend = ctx.services.get(REDIS_GATES_SERVICE)
    if backend is None:
        raise ConfigError(f"gate type {gate_type!r} needs Redis access", field="gate_type")
    return cast(RedisGateBackend, backend)
