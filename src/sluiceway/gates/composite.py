"""``composite``: several gates as one; budget = the smallest, apply = all or nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sluiceway.config.gate_params import CompositeParams, GateSpec
from sluiceway.gates.base import Decision, Gate, GateRequest, Holdings, apply_chain
from sluiceway.gates.context import GateContext

__all__ = ["CompositeGate", "build"]


class CompositeGate:
    def __init__(self, gates: Sequence[Gate]) -> None:
        self._gates = list(gates)

    async def budget(self, now: float) -> float:
        return min([await g.budget(now) for g in self._gates], default=1.0)

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        return await apply_chain(self._gates, request, holdings, now)

    async def aclose(self) -> None:
        for gate in self._gates:
            await gate.aclose()


def build_nested(spec: GateSpec, ctx: GateContext, where: str) -> Gate:
    """Build one nested gate config (shared with ``wait-on-refuse``)."""
    gate = ctx.build(spec.gate_type, spec.gate_params, ctx, field=where)
    assert gate is not None  # gate_type is non-empty by validation
    return gate


def build(params: CompositeParams, ctx: GateContext) -> Gate:
    inner: list[Any] = [
        build_nested(spec, ctx, f"gates.{i}.gate_params") for i, spec in enumerate(params.gates)
    ]
    return CompositeGate(inner)
