"""The sqlite broker's inspection views."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from brokers.inspect_conformance import InspectConformance
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.sqlite import open_sqlite_broker


class TestSqliteInspection(InspectConformance):
    @pytest.fixture
    async def broker(self, tmp_path: Path) -> AsyncIterator[Broker]:
        broker = await open_sqlite_broker(BrokerOptions(url=str(tmp_path / "q.db")))
        yield broker
        await broker.aclose()

    async def invalid_reasons(self, broker: Any, queue: str) -> dict[str, str]:
        return dict(await broker.invalid_reasons(queue))
