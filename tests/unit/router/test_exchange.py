"""One proxied request's live state: an eviction or a client leaving flags the exchange and
cuts its current wait short (the wait's scope, not the task); an interrupt that came before
the wait cuts it at once; once the last byte is going out, nothing is interrupted."""

from __future__ import annotations

import asyncio

import pytest

from sluiceway.router.exchange import Exchange


async def _waiting(exchange: Exchange, entered: asyncio.Event) -> bool:
    """A handler's wait, as the router runs one: True when an interrupt cut it short."""
    with exchange.interruptible() as scope:
        entered.set()
        await asyncio.Event().wait()
    return scope.cancelled_caught


async def _handler(exchange: Exchange) -> asyncio.Task[bool]:
    entered = asyncio.Event()
    task = asyncio.create_task(_waiting(exchange, entered))
    await entered.wait()
    return task


@pytest.mark.parametrize("evicted", [True, False])
async def test_an_interrupt_flags_why_and_cuts_the_wait_not_the_task(evicted: bool) -> None:
    exchange = Exchange("r1")
    task = await _handler(exchange)
    exchange.interrupt(evicted=evicted)
    assert (exchange.evicted, exchange.disconnected) == (evicted, not evicted)
    assert await task is True  # the task ran on after its wait and returned normally
    assert exchange.interrupted


async def test_an_interrupt_before_the_wait_cuts_it_at_once() -> None:
    exchange = Exchange("r1")
    exchange.interrupt()
    assert await asyncio.wait_for(await _handler(exchange), 5) is True


async def test_a_complete_exchange_ignores_a_late_notice() -> None:
    exchange = Exchange("r1")
    task = await _handler(exchange)
    exchange.complete = True
    exchange.interrupt()
    exchange.interrupt(evicted=True)
    assert not exchange.interrupted
    await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancelled_handler_is_not_mistaken_for_an_interrupt() -> None:
    """The server stopping the handler (its task cancelled) passes through the scope."""
    exchange = Exchange("r1")
    task = await _handler(exchange)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not exchange.interrupted
