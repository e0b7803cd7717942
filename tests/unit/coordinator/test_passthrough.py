from __future__ import annotations

from sluiceway.clock import VirtualClock
from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.coordinator.passthrough import (
    HOLDER_LEASE_SECONDS,
    QuotaHold,
    QuotaKeeper,
    stamped_headers,
)
from sluiceway.coordinator.routes import TenantRoutes
from sluiceway.gates.quota_store import MemoryQuotaStore

PARAMS = AsyncBrokerParams.model_validate(
    {
        "redis_url": "memory://",
        "quota": {"attribute": "team", "limits": {"premium": 2, "none": 0}},
        "objectives": {"interactive": {"reserved": "ri", "overflow": "oi"}},
    }
)
KEY = "quota:team:premium"


async def test_within_the_limit_reserved_beyond_it_overflow_never_blocked() -> None:
    store, clock = MemoryQuotaStore(), VirtualClock()
    keeper = QuotaKeeper(store, PARAMS, clock=clock)
    holds = [await keeper.take("premium") for _ in range(3)]
    assert [h.reserved for h in holds] == [True, True, False]
    assert await store.count(KEY) == 2
    await keeper.give_back(holds[0])
    assert await store.count(KEY) == 1
    assert (await keeper.take("premium")).reserved


async def test_no_limit_is_always_reserved_and_zero_always_overflow() -> None:
    keeper = QuotaKeeper(MemoryQuotaStore(), PARAMS, clock=VirtualClock())
    assert (await keeper.take("realtime")) == QuotaHold(reserved=True)
    assert (await keeper.take("none")) == QuotaHold(reserved=False)


async def test_a_kept_hold_outlives_its_first_lease_and_an_abandoned_one_lapses() -> None:
    store, clock = MemoryQuotaStore(), VirtualClock()
    keeper = QuotaKeeper(store, PARAMS, clock=clock)
    kept, dropped = await keeper.take("premium"), await keeper.take("premium")
    task = keeper.keeper_task(kept)
    assert task is not None
    await clock.run_until_idle(limit=0)
    for _ in range(6):  # two leases' worth, renewed every third of one
        clock.advance(HOLDER_LEASE_SECONDS / 3)
        await clock.run_until_idle(limit=0)
    # A new taker reaps the lapsed holder; the kept one still holds its slot.
    assert (await keeper.take("premium")).reserved
    assert not (await keeper.take("premium")).reserved
    task.cancel()
    assert dropped.holder and kept.holder


def test_client_objective_and_fairness_are_replaced() -> None:
    sent = [
        ("x-llm-d-inference-objective", "mine"),
        ("x-gateway-inference-fairness-id", "me"),
        ("x-llm-d-async-mode", "passthrough"),
        ("authorization", "Bearer k"),
        ("x-custom", "1"),
    ]
    out = stamped_headers(
        sent,
        params=PARAMS,
        routes=TenantRoutes(PARAMS),
        tier="interactive",
        tenant="premium",
        hold=QuotaHold(reserved=False),
        drop=frozenset({"authorization"}),
    )
    assert out == [
        ("x-custom", "1"),
        ("x-llm-d-inference-objective", "oi"),
        ("x-llm-d-inference-fairness-id", "premium"),
    ]
