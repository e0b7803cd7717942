"""The cancel watch aborts attempts whose generation was cancelled, and only those."""

from __future__ import annotations

import asyncio

import anyio

from sluiceway.broker.base import ActiveMarker
from sluiceway.broker.memory import MemoryBroker
from sluiceway.errors import BrokerError
from sluiceway.processor.cancel_watch import CancelWatch


async def _attempt(scope: anyio.CancelScope, started: asyncio.Event) -> bool:
    """An attempt in its scope, as the worker runs one: True when its scope cut it short."""
    with scope:
        started.set()
        await asyncio.Event().wait()
    return scope.cancelled_caught


async def test_only_the_cancelled_generation_is_aborted() -> None:
    broker = MemoryBroker()
    await broker.enqueue(
        "q", [], markers=[ActiveMarker("a", "t1", 60), ActiveMarker("b", "t2", 60)]
    )
    await broker.cancel("a", expire_after=60)
    watch = CancelWatch()
    first, second = anyio.CancelScope(), anyio.CancelScope()
    started = asyncio.Event(), asyncio.Event()
    tasks = [
        asyncio.ensure_future(_attempt(s, e)) for s, e in zip((first, second), started, strict=True)
    ]
    await asyncio.gather(*(e.wait() for e in started))
    watch.track(("a", "t1"), first)
    watch.track(("b", "t2"), second)
    assert await watch.check_once(broker) == 1
    assert await tasks[0] is True  # the task ended normally: the scope absorbed its cancel
    assert not tasks[1].done() and not second.cancel_called
    assert await watch.check_once(broker) == 0  # already cancelled: not counted twice
    watch.untrack(("a", "t1"))
    watch.untrack(("b", "t2"))
    assert len(watch) == 0
    tasks[1].cancel()
    await asyncio.gather(tasks[1], return_exceptions=True)


async def test_failed_checks_abort_nothing() -> None:
    class Down(MemoryBroker):
        async def is_cancelled(self, request_id: str, request_token: str) -> bool:
            raise BrokerError("down")

    watch = CancelWatch()
    scope = anyio.CancelScope()
    watch.track(("a", "t"), scope)
    assert await watch.check_once(Down()) == 0
    assert not scope.cancel_called
