"""One proxied request's live state: an eviction or a client leaving flags the exchange, then
cancels its handler; once the last byte is going out, or before a handler runs, nothing is
interrupted."""

from __future__ import annotations

import asyncio

import pytest

from sluiceway.router.exchange import Exchange


def handled() -> Exchange:
    exchange = Exchange("r1")
    exchange.task = asyncio.create_task(asyncio.sleep(60))
    return exchange


async def _ended(task: asyncio.Task[None] | None) -> bool:
    """Whether the handler was cancelled (one that was not is cancelled here, to clean up)."""
    assert task is not None
    await asyncio.sleep(0)
    cancelled = task.cancelled()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return cancelled


@pytest.mark.parametrize("evicted", [True, False])
async def test_an_interrupt_flags_why_and_cancels_the_handler(evicted: bool) -> None:
    exchange = handled()
    exchange.interrupt(evicted=evicted)
    assert (exchange.evicted, exchange.disconnected) == (evicted, not evicted)
    assert await _ended(exchange.task)


async def test_a_complete_exchange_ignores_a_late_notice() -> None:
    exchange = handled()
    exchange.complete = True
    exchange.interrupt()
    exchange.interrupt(evicted=True)
    assert not (exchange.evicted or exchange.disconnected)
    assert not await _ended(exchange.task)


def test_nothing_is_flagged_before_a_handler_runs() -> None:
    exchange = Exchange("r1")
    exchange.interrupt(evicted=True)
    assert not (exchange.evicted or exchange.disconnected)
