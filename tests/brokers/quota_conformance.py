"""The quota counter-store conformance suite (concurrency holders with leases, rate windows).

Subclass :class:`QuotaStoreConformance` in a ``test_*.py`` module with an async ``store``
fixture yielding a fresh, empty :class:`~sluiceway.gates.quota_store.QuotaStore`.
"""

from __future__ import annotations

import asyncio

from sluiceway.gates.quota_store import QuotaStore, quota_key

NOW = 1_700_000_000.0
KEY = quota_key("quota:", "team", "batch")


class QuotaStoreConformance:
    async def test_key_shape_matches_the_contract(self) -> None:
        assert KEY == "quota:team:batch"

    async def test_acquire_up_to_the_limit(self, store: QuotaStore) -> None:
        got = [
            await store.acquire(KEY, holder=f"h{i}", limit=2, lease_until=NOW + 60, now=NOW)
            for i in range(3)
        ]
        assert got == [True, True, False]
        assert await store.count(KEY) == 2

    async def test_release_frees_a_slot_once(self, store: QuotaStore) -> None:
        assert await store.acquire(KEY, holder="a", limit=1, lease_until=NOW + 60, now=NOW)
        assert await store.release(KEY, holder="a")
        assert await store.release(KEY, holder="a") is False
        assert await store.count(KEY) == 0
        assert await store.acquire(KEY, holder="b", limit=1, lease_until=NOW + 60, now=NOW)

    async def test_reacquire_by_the_same_holder_is_idempotent(self, store: QuotaStore) -> None:
        for _ in range(3):
            assert await store.acquire(KEY, holder="a", limit=1, lease_until=NOW + 60, now=NOW)
        assert await store.count(KEY) == 1

    async def test_expired_holders_are_reaped_on_acquire(self, store: QuotaStore) -> None:
        assert await store.acquire(KEY, holder="dead", limit=1, lease_until=NOW + 10, now=NOW)
        assert not await store.acquire(KEY, holder="b", limit=1, lease_until=NOW + 60, now=NOW + 5)
        assert await store.acquire(KEY, holder="b", limit=1, lease_until=NOW + 60, now=NOW + 11)
        assert await store.count(KEY) == 1
        assert await store.release(KEY, holder="dead") is False

    async def test_renew_keeps_a_holder_alive(self, store: QuotaStore) -> None:
        assert await store.acquire(KEY, holder="a", limit=1, lease_until=NOW + 10, now=NOW)
        assert await store.renew(KEY, holder="a", lease_until=NOW + 100)
        assert not await store.acquire(KEY, holder="b", limit=1, lease_until=NOW + 60, now=NOW + 50)
        assert await store.renew(KEY, holder="ghost", lease_until=NOW + 100) is False

    async def test_keys_are_independent(self, store: QuotaStore) -> None:
        other = quota_key("quota:", "team", "premium")
        assert await store.acquire(KEY, holder="a", limit=1, lease_until=NOW + 60, now=NOW)
        assert await store.acquire(other, holder="a", limit=1, lease_until=NOW + 60, now=NOW)
        assert (await store.count(KEY), await store.count(other)) == (1, 1)

    async def test_concurrent_acquires_never_exceed_the_limit(self, store: QuotaStore) -> None:
        results = await asyncio.gather(
            *(
                store.acquire(KEY, holder=f"h{i}", limit=3, lease_until=NOW + 60, now=NOW)
                for i in range(20)
            )
        )
        assert sum(results) == 3
        assert await store.count(KEY) == 3

    async def test_count_of_an_unknown_key_is_zero(self, store: QuotaStore) -> None:
        assert await store.count("quota:team:nobody") == 0

    async def test_rate_window_slides(self, store: QuotaStore) -> None:
        admitted = [
            await store.admit_rate(KEY, member=f"m{i}", limit=2, window=60, now=NOW + i)
            for i in range(3)
        ]
        assert admitted == [True, True, False]
        assert await store.admit_rate(KEY, member="m3", limit=2, window=60, now=NOW + 60.5)
        assert not await store.admit_rate(KEY, member="m4", limit=2, window=60, now=NOW + 60.6)

    async def test_rate_members_at_the_same_instant_all_count(self, store: QuotaStore) -> None:
        admitted = [
            await store.admit_rate(KEY, member=f"m{i}", limit=3, window=60, now=NOW)
            for i in range(4)
        ]
        assert admitted == [True, True, True, False]
