"""``constant``: a fixed budget (1 = always open). ``budget`` is sluiceway's addition."""

from __future__ import annotations

from pydantic import Field

from sluiceway.config.base import StrictModel
from sluiceway.config.params import FlexFloat
from sluiceway.gates.base import BudgetGate, Gate
from sluiceway.gates.factory import GateContext, register_gate

__all__ = ["ConstantGate", "ConstantParams", "build"]


class ConstantParams(StrictModel):
    """``budget`` in [0, 1] (default 1: open)."""

    budget: FlexFloat = Field(default=1.0, ge=0.0, le=1.0)


class ConstantGate(BudgetGate):
    def __init__(self, budget: float = 1.0) -> None:
        self._budget = budget

    async def budget(self, now: float) -> float:
        return self._budget


@register_gate("constant", ConstantParams)
def build(params: ConstantParams, ctx: GateContext) -> Gate:
    return ConstantGate(params.budget)
