"""``redis-leased-rate``: a pool-wide token bucket shared by every replica through Redis, at a
rate an external controller leases.

The controller writes the control hash at ``control_key``: ``api_version``
(``llm-d.ai/v1alpha1``), ``pool_id``, ``max_admission_rps``, ``valid_until_unix_ms`` and
``decision_id``. Each admission runs one script that validates the whole lease (version, pool,
a finite rate >= 0, an unexpired lease, a decision id), refills the bucket (capacity
``max(1, rate x burst_seconds)``) and takes one token. A rate of 0 pauses the pool.

Time is the caller's unscaled wall clock in milliseconds (the controller writes wall time),
never Redis ``TIME``. Every failure (no lease, an invalid or expired one, an empty bucket,
Redis down) refuses without an error, so a ``wait-on-refuse`` wrapper parks instead of failing
the request: the gate fails closed. Budget: 1 while a valid lease with a positive rate exists,
else 0, read by the shared refresher.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

from sluiceway.config.gate_params import LeasedRateParams
from sluiceway.errors import SluicewayError
from sluiceway.gates.base import CONTINUE, REFUSE, Decision, Gate, GateRequest, Holdings
from sluiceway.gates.context import GateContext
from sluiceway.gates.metric import MetricGate, signal_hub
from sluiceway.gates.redis_backend import LeasedRateStore, redis_backend
from sluiceway.signals.base import Reading, Sample

__all__ = [
    "LEASE_API_VERSION",
    "LeaseSignal",
    "LeasedRateGate",
    "build",
    "lease_problem",
]

LEASE_API_VERSION = "llm-d.ai/v1alpha1"
_FIELDS = ("api_version", "pool_id", "max_admission_rps", "valid_until_unix_ms", "decision_id")


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def lease_problem(control: Mapping[str, str], *, pool_id: str, now_ms: int) -> str:
    """Why the lease admits nothing ("" when it is valid with a positive rate)."""
    missing = [f for f in _FIELDS if not control.get(f)]
    if missing:
        return f"lease lacks {missing[0]}"
    if control["api_version"] != LEASE_API_VERSION:
        return f"api_version {control['api_version']!r}"
    if control["pool_id"] != pool_id:
        return f"lease is for pool {control['pool_id']!r}"
    rate, until = _number(control["max_admission_rps"]), _number(control["valid_until_unix_ms"])
    if rate is None or rate < 0:
        return "bad max_admission_rps"
    if until is None:
        return "bad valid_until_unix_ms"
    if until <= now_ms:
        return "lease expired"
    return "paused (rate 0)" if rate == 0 else ""


def wall_ms() -> int:
    """Unscaled wall time in milliseconds (the controller's clock)."""
    return time.time_ns() // 1_000_000


class LeaseSignal:
    """1 while the lease is valid with a positive rate, 0 otherwise; an error when unreadable."""

    def __init__(
        self, store: LeasedRateStore, *, pool_id: str, now_ms: Callable[[], int] = wall_ms
    ) -> None:
        self._store = store
        self._pool = pool_id
        self._now_ms = now_ms

    @property
    def key(self) -> str:
        return f"lease {self._store.key}"

    async def read(self) -> Reading:
        try:
            control = await self._store.control()
        except SluicewayError as exc:
            return Reading(error=str(exc))
        problem = lease_problem(control, pool_id=self._pool, now_ms=self._now_ms())
        return Reading((Sample(0.0 if problem else 1.0, {"problem": problem}),))

    async def aclose(self) -> None:
        return None


class LeasedRateGate(MetricGate):
    """Admits one request per token; refuses (never errors) on any failure."""

    store: LeasedRateStore
    now_ms: Callable[[], int] = staticmethod(wall_ms)

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        try:
            taken, _ = await self.store.take(self.now_ms())
        except SluicewayError:
            return REFUSE
        return CONTINUE if taken else REFUSE


def build(params: LeasedRateParams, ctx: GateContext) -> Gate:
    pool_id = params.pool_id or ctx.labels.get("pool_name", "")
    store = redis_backend(ctx, "redis-leased-rate").leased_rate(
        params.address,
        control_key=params.control_key,
        state_key=params.state_key,
        pool_id=pool_id,
        burst=params.burst_seconds,
    )
    gate = LeasedRateGate(
        signal_hub(ctx),
        LeaseSignal(store, pool_id=pool_id),
        lambda v: v,
        name="redis-leased-rate",
        ctx=ctx,
        pool=pool_id,
    )
    gate.store = store
    return gate
