"""``wait-on-refuse``: the inner gate's Refuse becomes Wait, so a pool worker parks with its
request (upstream's way to hold work in memory instead of churning the broker)."""

from __future__ import annotations

from sluiceway.config.gate_params import WaitOnRefuseParams
from sluiceway.gates.base import WAIT, Decision, Gate, GateRequest, Holdings, Verdict
from sluiceway.gates.composite import build_nested
from sluiceway.gates.context import GateContext

__all__ = ["WaitOnRefuseGate", "build"]


class WaitOnRefuseGate:
    def __init__(self, inner: Gate) -> None:
        self._inner = inner

    async def budget(self, now: float) -> float:
        return await self._inner.budget(now)

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        decision = await self._inner.apply(request, holdings, now)
        return WAIT if decision.verdict is Verdict.REFUSE else decision

    async def aclose(self) -> None:
        await self._inner.aclose()


def build(params: WaitOnRefuseParams, ctx: GateContext) -> Gate:
    return WaitOnRefuseGate(build_nested(params.gate, ctx, "gate.gate_params"))
