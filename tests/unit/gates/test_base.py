"""Holdings roll back in reverse; chains are all or nothing."""

from __future__ import annotations

from sluiceway.gates.base import (
    CONTINUE,
    REFUSE,
    Decision,
    GateRequest,
    Holdings,
    Verdict,
    apply_chain,
    budget_allows,
)

NOW = 1_700_000_000.0


def request() -> GateRequest:
    return GateRequest("r", "t", "t:o", deadline=NOW + 60, lease_until=NOW + 30)


class Recorder:
    def __init__(self, name: str, log: list[str], decision: Decision = CONTINUE) -> None:
        self.name, self.log, self.decision = name, log, decision

    async def budget(self, now: float) -> float:
        return 1.0

    async def apply(self, req: GateRequest, holdings: Holdings, now: float) -> Decision:
        async def release() -> None:
            self.log.append(f"release {self.name}")

        if self.decision.admitted:
            holdings.add(release)
        return self.decision

    async def aclose(self) -> None:
        return None


async def test_a_refusal_rolls_back_the_chain_newest_first() -> None:
    log: list[str] = []
    holdings = Holdings()
    gates = [Recorder("a", log), Recorder("b", log), Recorder("c", log, REFUSE)]
    decision = await apply_chain(gates, request(), holdings, NOW)
    assert decision.verdict is Verdict.REFUSE
    assert log == ["release b", "release a"] and len(holdings) == 0


async def test_rollback_keeps_what_was_held_before_the_chain() -> None:
    log: list[str] = []
    holdings = Holdings()
    await apply_chain([Recorder("outer", log)], request(), holdings, NOW)
    await apply_chain([Recorder("x", log), Recorder("y", log, REFUSE)], request(), holdings, NOW)
    assert log == ["release x"] and len(holdings) == 1
    await holdings.release_all()
    await holdings.release_all()
    assert log == ["release x", "release outer"]


async def test_failing_release_does_not_stop_the_others() -> None:
    log: list[str] = []
    holdings = Holdings()

    async def boom() -> None:
        raise RuntimeError("store down")

    async def fine() -> None:
        log.append("fine")

    holdings.add(fine)
    holdings.add(boom)
    await holdings.release_all()
    assert log == ["fine"]


async def test_renew_reaches_renewable_holdings() -> None:
    seen: list[float] = []
    holdings = Holdings()

    async def release() -> None:
        return None

    async def renew(until: float) -> None:
        seen.append(until)

    holdings.add(release, renew)
    holdings.add(release)
    await holdings.renew_all(NOW + 99)
    assert seen == [NOW + 99]


def test_budget_allows_up_to_ceil_budget_times_workers() -> None:
    assert budget_allows(1.0, 99, 4)  # a full budget sets no cap
    assert budget_allows(0.3, 1, 4) and not budget_allows(0.3, 2, 4)  # ceil(1.2) = 2
    assert not budget_allows(0.0, 0, 4)
