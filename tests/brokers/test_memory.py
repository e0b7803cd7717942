"""The memory broker through the conformance suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.memory import MemoryBroker, open_memory_broker

from .conformance import BrokerConformance
from .peek_order_conformance import PeekOrderConformance


class TestMemoryBroker(BrokerConformance, PeekOrderConformance):
    @pytest.fixture
    async def broker(self) -> AsyncIterator[Broker]:
        broker = await open_memory_broker(BrokerOptions())
        yield broker
        await broker.aclose()


async def test_timed_out_waits_leave_no_waiters_behind() -> None:
    # An idle consumer polls wait_for_work forever; each timed-out wait must not stay
    # registered until some arrival happens to sweep it.
    broker = MemoryBroker()
    for _ in range(3):
        assert await broker.wait_for_work(["q"], 0.001) is False
        assert await broker.pop_result("results", 0.001) is None
    assert broker.waiting() == 0
