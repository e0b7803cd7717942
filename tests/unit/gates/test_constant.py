"""constant: a fixed budget."""

from __future__ import annotations

from sluiceway.gates.base import GateRequest, Holdings, Verdict
from sluiceway.gates.constant import ConstantGate

NOW = 1_700_000_000.0


def req() -> GateRequest:
    return GateRequest("r", "t", "h", NOW + 60, NOW + 30)


async def test_constant_budget_and_refusal_when_closed() -> None:
    assert (await ConstantGate().apply(req(), Holdings(), NOW)).verdict is Verdict.CONTINUE
    closed = ConstantGate(0.0)
    assert await closed.budget(NOW) == 0.0
    assert (await closed.apply(req(), Holdings(), NOW)).verdict is Verdict.REFUSE
