"""The cancel watch aborts attempts whose generation was cancelled, and only those."""

from __future__ import annotations

import asyncio

from sluiceway.broker.base import ActiveMarker
from sluiceway.broker.memory import MemoryBroker
from sluiceway.errors import BrokerError
from sluiceway.processor.cancel_watch import CancelWatch


async def never() -> None:
    await asyncio.Event().wait()


async def test_only_the_cancelled_generation_is_aborted() -> None:
    broker = MemoryBroker()
    await broker.enqueue(
        "q", [], markers=[ActiveMarker("a", "t1", 60), ActiveMarker("b", "t2", 60)]
    )
    await broker.cancel("a", expire_after=60)
    watch = CancelWatch()
    first, second = asyncio.ensure_future(never()), asyncio.ensure_future(never())
    watch.track(("a", "t1"), first)
    watch.track(("b", "t2"), second)
    assert await watch.check_once(broker) == 1
    await asyncio.gather(first, return_exceptions=True)
    assert first.cancelled() and not second.done()
    assert watch.untrack(("a", "t1")) is True and watch.untrack(("b", "t2")) is False
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    assert len(watch) == 0


async def test_failed_checks_abort_nothing() -> None:
    class Down(MemoryBroker):
        async def is_cancelled(self, request_id: str, request_token: str) -> bool:
            raise BrokerError("down")

    watch = CancelWatch()
    attempt = asyncio.ensure_future(never())
    watch.track(("a", "t"), attempt)
    assert await watch.check_once(Down()) == 0
    assert not attempt.done()
    attempt.cancel()
    await asyncio.gather(attempt, return_exceptions=True)
