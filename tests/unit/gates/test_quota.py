"""Quota classification (pure) and the gate over the in-process store."""

from __future__ import annotations

import pytest

from sluiceway.gates.base import GateRequest, Holdings, Verdict
from sluiceway.gates.quota import QuotaGate, QuotaRule, classify
from sluiceway.gates.quota_store import MemoryQuotaStore

NOW = 1_700_000_000.0


def rule(**kw: object) -> QuotaRule:
    base: dict[str, object] = {"attribute": "team", "mode": "concurrency", "limit": 1, "window": 60}
    base.update(kw)
    return QuotaRule(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("within", "gating", "missing", "verdict", "label"),
    [
        (True, "classifying", "overflow", Verdict.CONTINUE, "reserved"),
        (False, "classifying", "overflow", Verdict.CONTINUE, "overflow"),
        (True, "blocking", "overflow", Verdict.CONTINUE, "reserved"),
        (False, "blocking", "overflow", Verdict.REFUSE, "overflow"),
        (None, "classifying", "overflow", Verdict.CONTINUE, "overflow"),
        (None, "classifying", "reserved", Verdict.CONTINUE, "reserved"),
        (None, "blocking", "refuse", Verdict.REFUSE, None),
    ],
)
def test_classify_table(
    within: bool | None, gating: str, missing: str, verdict: Verdict, label: str | None
) -> None:
    decision, got = classify(within, rule(gating_mode=gating, missing_attribute=missing))
    assert (decision.verdict, got) == (verdict, label)


def req(team: str | None, holder: str) -> GateRequest:
    metadata = {} if team is None else {"team": team}
    return GateRequest("r", "t", holder, NOW + 60, NOW + 30, metadata=metadata)


async def test_concurrency_classifies_and_releases_the_slot() -> None:
    store = MemoryQuotaStore()
    gate = QuotaGate(rule(limit=1, gating_mode="classifying"), store)
    first, second = req("batch", "h1"), req("batch", "h2")
    h1, h2 = Holdings(), Holdings()
    one = await gate.apply(first, h1, NOW)
    assert one.verdict is Verdict.CONTINUE
    assert one.classification == "reserved" and await store.count("quota:team:batch") == 1
    two = await gate.apply(second, h2, NOW)
    assert two.verdict is Verdict.CONTINUE
    assert two.classification == "overflow" and len(h2) == 0
    await h1.release_all()
    assert await store.count("quota:team:batch") == 0


async def test_teams_have_independent_counters() -> None:
    store = MemoryQuotaStore()
    gate = QuotaGate(rule(limit=1, gating_mode="classifying"), store)
    a, b = req("a", "h1"), req("b", "h2")
    got_a = await gate.apply(a, Holdings(), NOW)
    got_b = await gate.apply(b, Holdings(), NOW)
    assert (got_a.classification, got_b.classification) == ("reserved", "reserved")


async def test_heartbeat_renewal_keeps_the_holder() -> None:
    store = MemoryQuotaStore()
    gate = QuotaGate(rule(limit=1), store)
    holdings = Holdings()
    await gate.apply(req("a", "h1"), holdings, NOW)
    await holdings.renew_all(NOW + 500)
    late = req("a", "h2")
    refused = await gate.apply(late, Holdings(), NOW + 100)
    assert (refused.verdict, refused.classification) == (Verdict.REFUSE, "overflow")


async def test_rate_limit_mode_counts_admissions_in_the_window() -> None:
    gate = QuotaGate(rule(mode="rate-limit", limit=2, window=10), MemoryQuotaStore())
    verdicts = [(await gate.apply(req("a", f"h{i}"), Holdings(), NOW)).verdict for i in range(3)]
    assert verdicts == [Verdict.CONTINUE, Verdict.CONTINUE, Verdict.REFUSE]
    assert (await gate.apply(req("a", "h9"), Holdings(), NOW + 11)).verdict is Verdict.CONTINUE


async def test_store_failure_is_an_error_verdict() -> None:
    from sluiceway.errors import BrokerError

    class Broken(MemoryQuotaStore):
        async def acquire(self, key: str, **kw: object) -> bool:  # type: ignore[override]
            raise BrokerError("redis down")

    decision = await QuotaGate(rule(), Broken()).apply(req("a", "h"), Holdings(), NOW)
    assert decision.verdict is Verdict.ERROR and "redis down" in decision.message
