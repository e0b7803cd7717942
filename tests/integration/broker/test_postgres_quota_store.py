"""The sql-quota store through the quota-store conformance suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from brokers.quota_conformance import QuotaStoreConformance
from sluiceway.broker.postgres_quota import open_postgres_quota_store
from sluiceway.gates.quota_store import QuotaStore


class TestPostgresQuotaStore(QuotaStoreConformance):
    @pytest.fixture
    async def store(self, postgres_dsn: str) -> AsyncIterator[QuotaStore]:
        store = await open_postgres_quota_store(postgres_dsn)
        yield store
        await store.aclose()
