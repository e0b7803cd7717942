"""``constant``: a fixed budget (1 = always open). ``budget`` is sluiceway's addition."""

from __future__ import annotations

from sluiceway.config.gate_params import ConstantParams
from sluiceway.gates.base import BudgetGate, Gate
from sluiceway.gates.context import GateContext

__all__ = ["ConstantGate", "build"]


class ConstantGate(BudgetGate):
    def __init__(self, budget: float = 1.0) -> None:
        self._budget = budget

    async def budget(self, now: float) -> float:
        return self._budget


def build(params: ConstantParams, ctx: GateContext) -> Gate:
    return ConstantGate(params.budget)
