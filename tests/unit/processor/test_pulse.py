"""Pulse: wakes every waiter; ``since`` catches a fire that happened before the wait."""

from __future__ import annotations

import asyncio

from sluiceway.processor.pulse import Pulse


async def test_fire_wakes_all_waiters() -> None:
    pulse = Pulse()
    waiters = [asyncio.create_task(pulse.wait(5.0)) for _ in range(3)]
    await asyncio.sleep(0)
    pulse.fire()
    assert await asyncio.gather(*waiters) == [True, True, True]


async def test_wait_times_out_without_a_fire() -> None:
    assert await Pulse().wait(0.01) is False


async def test_a_fire_before_the_wait_is_not_missed_with_since() -> None:
    pulse = Pulse()
    seen = pulse.generation
    pulse.fire()
    assert await pulse.wait(0.01, since=seen) is True
    assert await pulse.wait(0.01, since=pulse.generation) is False
