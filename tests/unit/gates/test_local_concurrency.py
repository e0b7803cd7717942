"""local-max-concurrency: an in-process counter."""

from __future__ import annotations

from sluiceway.gates.base import GateRequest, Holdings, Verdict
from sluiceway.gates.local_concurrency import LocalConcurrencyGate

NOW = 1_700_000_000.0


def req() -> GateRequest:
    return GateRequest("r", "t", "h", NOW + 60, NOW + 30)


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
