"""``wait-on-refuse``: the inner gate's Refuse becomes Wait, so a pool worker parks with its
request (upstream's way to hold work in memory instead of churning the broker)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

from sluiceway.config.base import StrictModel
from sluiceway.config.params import decode_json_object
from sluiceway.gates.base import WAIT, Decision, Gate, GateRequest, Holdings, Verdict
from sluiceway.gates.composite import GateSpec, build_nested
from sluiceway.gates.factory import GateContext, register_gate

__all__ = ["WaitOnRefuseGate", "WaitOnRefuseParams", "build"]


class WaitOnRefuseParams(StrictModel):
    gate: Annotated[GateSpec, BeforeValidator(decode_json_object)]


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


@register_gate("wait-on-refuse", WaitOnRefuseParams)
def build(params: WaitOnRefuseParams, ctx: GateContext) -> Gate:
    return WaitOnRefuseGate(build_nested(params.gate, ctx, "gate.gate_params"))
