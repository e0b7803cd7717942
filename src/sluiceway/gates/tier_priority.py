"""``tier-priority-admission``: when the pool saturates, who waits, who goes back, who is shed.

The inner ``saturation_gate`` (built from ``saturation_gate_params``) decides "saturated" by
refusing. While it admits, every request continues. While it refuses:

==========================================  ==========================================
request                                     verdict
==========================================  ==========================================
classified ``reserved``                     Wait (a pool worker parks with it)
tier ``interactive`` (``tier_label``) and   Drop, answered with a 429 payload
classified ``overflow``
anything else (async / batch overflow,      Refuse (back to the broker)
no classification)
==========================================  ==========================================

A blind inner gate never sheds: without its signal the gate answers Wait (reserved) or Refuse.
Its budget is the inner budget while that is open; once the inner budget reaches 0 it answers
1, so the pool applies this table to each request instead of parking everyone.
"""

from __future__ import annotations

from sluiceway.config.gate_params import TierPriorityParams
from sluiceway.gates.base import (
    CONTINUE,
    REFUSE,
    WAIT,
    Decision,
    Gate,
    GateRequest,
    Holdings,
    Verdict,
)
from sluiceway.gates.context import GateContext
from sluiceway.wire.lanes import OVERFLOW, RESERVED

__all__ = ["SHED_PAYLOAD", "TierPriorityAdmissionGate", "build", "verdict"]

SHED_PAYLOAD = '{"error": "Too Many Requests", "code": 429}'
SHED = Decision(Verdict.DROP, "shed: pool saturated", SHED_PAYLOAD)
INTERACTIVE = "interactive"


def verdict(classification: str | None, tier: str | None, *, blind: bool) -> Decision:
    """The table of the module docstring, for a saturated pool."""
    if classification == RESERVED:
        return WAIT
    if tier == INTERACTIVE and classification == OVERFLOW and not blind:
        return SHED
    return REFUSE


class TierPriorityAdmissionGate:
    def __init__(self, inner: Gate, *, tier_label: str = "tier") -> None:
        self._inner = inner
        self._tier_label = tier_label

    @property
    def blind(self) -> bool:
        return bool(getattr(self._inner, "blind", False))

    async def budget(self, now: float) -> float:
        budget = await self._inner.budget(now)
        return budget if budget > 0 else 1.0

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        decision = await self._inner.apply(request, holdings, now)
        if decision.verdict is Verdict.ERROR:
            return Decision(Verdict.ERROR, f"saturation gate failed: {decision.message}")
        if decision.verdict is not Verdict.REFUSE:
            return CONTINUE if decision.admitted else decision
        tier = request.labels.get(self._tier_label)
        return verdict(request.classification, tier, blind=self.blind)

    async def aclose(self) -> None:
        await self._inner.aclose()


def build(params: TierPriorityParams, ctx: GateContext) -> Gate:
    inner = ctx.build(
        params.saturation_gate, params.saturation_gate_params, ctx, field="saturation_gate_params"
    )
    assert inner is not None  # saturation_gate is non-empty by validation
    return TierPriorityAdmissionGate(inner, tier_label=params.tier_label)
