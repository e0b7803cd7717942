"""``redis-quota``: per-attribute quota, classifying (reserved / overflow) or blocking.

The counter key is ``<prefix><attribute>:<metadata[attribute]>`` (``quota:team:premium``).
``concurrency`` mode holds one slot per admitted request (a holder with the request's claim
lease, renewed by the heartbeat, released with the result or the retry); ``rate-limit``
admits at most ``limit`` per sliding ``window``.

Within the limit the request is ``reserved``. Beyond it, ``classifying`` mode lets it through
as ``overflow`` (a lower lane) and ``blocking`` mode refuses it (it stays queued). A request
without the attribute follows ``missing_attribute``: ``overflow`` (default)
or ``reserved`` without taking a slot, or ``refuse``. Upstream let such requests through
unclassified and unlimited. The counters live in a :class:`QuotaStore` (in process, Redis or
SQLite); store failures are ERROR verdicts. ``address`` names the Redis server of the counters;
empty means the processor's own backend.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sluiceway.config.gate_params import GatingMode, MissingAttribute, Mode, QuotaGateParams
from sluiceway.errors import SluicewayError
from sluiceway.gates.base import (
    CONTINUE,
    REFUSE,
    Decision,
    Gate,
    GateRequest,
    Holdings,
    Release,
    Renew,
    Verdict,
)
from sluiceway.gates.context import GateContext
from sluiceway.gates.quota_store import QuotaStore, quota_key
from sluiceway.wire.lanes import OVERFLOW, RESERVED

__all__ = ["QuotaGate", "QuotaRule", "build", "classify"]


@dataclass(frozen=True, slots=True)
class QuotaRule:
    """The pure part of the gate's configuration."""

    attribute: str
    mode: Mode
    limit: int
    window: float
    prefix: str = "quota:"
    gating_mode: GatingMode = "blocking"
    missing_attribute: MissingAttribute = "overflow"


def classify(within_quota: bool | None, rule: QuotaRule) -> tuple[Decision, str | None]:
    """Verdict and classification label for a quota check.

    ``within_quota`` None means the request lacks the attribute.
    """
    if within_quota is None:
        if rule.missing_attribute == "refuse":
            return REFUSE, None
        return CONTINUE, rule.missing_attribute
    if within_quota:
        return CONTINUE, RESERVED
    if rule.gating_mode == "blocking":
        return REFUSE, OVERFLOW
    return CONTINUE, OVERFLOW


class QuotaGate:
    """A quota gate over a counter store."""

    def __init__(self, rule: QuotaRule, store: QuotaStore) -> None:
        self._rule = rule
        self._store = store

    @property
    def rule(self) -> QuotaRule:
        return self._rule

    async def budget(self, now: float) -> float:
        return 1.0

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        value = request.metadata.get(self._rule.attribute, "")
        try:
            within = await self._check(value, request, holdings, now) if value else None
        except SluicewayError as exc:
            return Decision(Verdict.ERROR, f"quota store failed: {exc}")
        decision, label = classify(within, self._rule)
        return decision if label is None else replace(decision, classification=label)

    async def _check(
        self, value: str, request: GateRequest, holdings: Holdings, now: float
    ) -> bool:
        rule, store = self._rule, self._store
        key = quota_key(rule.prefix, rule.attribute, value)
        if rule.mode == "rate-limit":
            return await store.admit_rate(
                key, member=request.holder, limit=rule.limit, window=rule.window, now=now
            )
        acquired = await store.acquire(
            key, holder=request.holder, limit=rule.limit, lease_until=request.lease_until, now=now
        )
        if acquired:
            holdings.add(*_slot_callbacks(store, key, request.holder))
        return acquired

    async def aclose(self) -> None:
        return None


def _slot_callbacks(store: QuotaStore, key: str, holder: str) -> tuple[Release, Renew]:
    async def release() -> None:
        await store.release(key, holder=holder)

    async def renew(lease_until: float) -> None:
        await store.renew(key, holder=holder, lease_until=lease_until)

    return release, renew


def build(params: QuotaGateParams, ctx: GateContext) -> Gate:
    rule = QuotaRule(
        attribute=params.attribute,
        mode=params.mode,
        limit=params.limit,
        window=params.window,
        prefix=params.prefix,
        gating_mode=params.gating_mode,
        missing_attribute=params.missing_attribute,
    )
    return QuotaGate(rule, ctx.quota_store(params.address))
