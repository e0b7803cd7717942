"""The in-process quota store through the quota-store conformance suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from sluiceway.gates.quota_store import MemoryQuotaStore, QuotaStore

from .quota_conformance import QuotaStoreConformance


class TestMemoryQuotaStore(QuotaStoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[QuotaStore]:
        store = MemoryQuotaStore()
        yield store
        await store.aclose()
