"""The memory broker's inspection views."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from sluiceway.broker.memory import MemoryBroker

from .inspect_conformance import InspectConformance


class TestMemoryInspection(InspectConformance):
    @pytest.fixture
    async def broker(self) -> AsyncIterator[MemoryBroker]:
        broker = MemoryBroker()
        yield broker
        await broker.aclose()

    async def invalid_reasons(self, broker: Any, queue: str) -> dict[str, str]:
        return dict(broker.invalid_reasons(queue))
