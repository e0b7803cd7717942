"""composite: the smallest budget, all or nothing."""

from __future__ import annotations

from sluiceway.gates.base import GateRequest, Holdings, Verdict
from sluiceway.gates.composite import CompositeGate
from sluiceway.gates.constant import ConstantGate
from sluiceway.gates.local_concurrency import LocalConcurrencyGate

NOW = 1_700_000_000.0


def req() -> GateRequest:
    return GateRequest("r", "t", "h", NOW + 60, NOW + 30)


async def test_composite_takes_the_smallest_budget_and_rolls_back() -> None:
    local = LocalConcurrencyGate(5)
    gate = CompositeGate([local, ConstantGate(0.0)])
    assert await gate.budget(NOW) == 0.0
    assert (await gate.apply(req(), Holdings(), NOW)).verdict is Verdict.REFUSE
    assert local.in_flight == 0
    assert await CompositeGate([]).budget(NOW) == 1.0
