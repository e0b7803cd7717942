"""constant, local-max-concurrency, composite and wait-on-refuse."""

from __future__ import annotations

from sluiceway.gates.base import GateRequest, Holdings, Verdict
from sluiceway.gates.composite import CompositeGate
from sluiceway.gates.constant import ConstantGate
from sluiceway.gates.local_concurrency import LocalConcurrencyGate
from sluiceway.gates.wait_on_refuse import WaitOnRefuseGate

NOW = 1_700_000_000.0


def req() -> GateRequest:
    return GateRequest("r", "t", "h", NOW + 60, NOW + 30)


async def test_constant_budget_and_refusal_when_closed() -> None:
    assert (await ConstantGate().apply(req(), Holdings(), NOW)).verdict is Verdict.CONTINUE
    closed = ConstantGate(0.0)
    assert await closed.budget(NOW) == 0.0
    assert (await closed.apply(req(), Holdings(), NOW)).verdict is Verdict.REFUSE


async def test_local_concurrency_refuses_or_waits_over_the_limit() -> None:
    gate = LocalConcurrencyGate(2)
    holdings = [Holdings() for _ in range(3)]
    verdicts = [(await gate.apply(req(), h, NOW)).verdict for h in holdings]
    assert verdicts == [Verdict.CONTINUE, Verdict.CONTINUE, Verdict.REFUSE]
    assert await gate.budget(NOW) == 0.0
    await holdings[0].release_all()
    await holdings[0].release_all()
    assert gate.in_flight == 1 and await gate.budget(NOW) == 0.5
    blocking = LocalConcurrencyGate(1, blocking=True)
    await blocking.apply(req(), Holdings(), NOW)
    assert (await blocking.apply(req(), Holdings(), NOW)).verdict is Verdict.WAIT


async def test_composite_takes_the_smallest_budget_and_rolls_back() -> None:
    local = LocalConcurrencyGate(5)
    gate = CompositeGate([local, ConstantGate(0.0)])
    assert await gate.budget(NOW) == 0.0
    assert (await gate.apply(req(), Holdings(), NOW)).verdict is Verdict.REFUSE
    assert local.in_flight == 0
    assert await CompositeGate([]).budget(NOW) == 1.0


async def test_wait_on_refuse_turns_refusals_into_waits() -> None:
    gate = WaitOnRefuseGate(ConstantGate(0.0))
    assert (await gate.apply(req(), Holdings(), NOW)).verdict is Verdict.WAIT
    open_gate = WaitOnRefuseGate(ConstantGate(1.0))
    assert (await open_gate.apply(req(), Holdings(), NOW)).verdict is Verdict.CONTINUE
