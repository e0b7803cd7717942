"""wait-on-refuse: refusals become waits."""

from __future__ import annotations

from sluiceway.gates.base import GateRequest, Holdings, Verdict
from sluiceway.gates.constant import ConstantGate
from sluiceway.gates.wait_on_refuse import WaitOnRefuseGate

NOW = 1_700_000_000.0


def req() -> GateRequest:
    return GateRequest("r", "t", "h", NOW + 60, NOW + 30)


async def test_wait_on_refuse_turns_refusals_into_waits() -> None:
    gate = WaitOnRefuseGate(ConstantGate(0.0))
    assert (await gate.apply(req(), Holdings(), NOW)).verdict is Verdict.WAIT
    open_gate = WaitOnRefuseGate(ConstantGate(1.0))
    assert (await open_gate.apply(req(), Holdings(), NOW)).verdict is Verdict.CONTINUE
