"""Scaled and virtual time."""

from __future__ import annotations

import asyncio
import time

import pytest

from sluiceway.clock import Clock, RealClock, VirtualClock


def test_real_clock_scales_around_anchor(monkeypatch: pytest.MonkeyPatch) -> None:
    wall = [1000.0]
    monkeypatch.setattr("time.time", lambda: wall[0])
    clock = RealClock(scale=10.0, anchor=1000.0)
    wall[0] = 1002.5
    assert clock.now() == pytest.approx(1025.0)
    assert clock.to_wall(30.0) == pytest.approx(3.0)
    assert isinstance(clock, Clock)


def test_real_clock_at_scale_one_is_the_wall_clock() -> None:
    clock = RealClock()
    before = time.time(), time.monotonic()
    now, mono = clock.now(), clock.monotonic()
    assert before[0] <= now <= time.time() and before[1] <= mono <= time.monotonic()
    assert clock.to_wall(3.0) == 3.0


def test_real_clock_rejects_non_positive_scale() -> None:
    with pytest.raises(ValueError, match="time scale"):
        RealClock(scale=0)


async def test_virtual_clock_wakes_sleepers_in_deadline_order() -> None:
    clock = VirtualClock(start=100.0)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.now()))

    tasks = [asyncio.create_task(sleeper("late", 5.0)), asyncio.create_task(sleeper("early", 1.0))]
    await asyncio.sleep(0)
    clock.advance(2.0)
    await asyncio.sleep(0)
    assert woke == [("early", 102.0)]
    await clock.run_until_idle()
    await asyncio.gather(*tasks)
    assert woke == [("early", 102.0), ("late", 105.0)]


def test_virtual_clock_never_goes_back() -> None:
    clock = VirtualClock(start=5.0)
    with pytest.raises(ValueError):
        clock.advance(-1)
    clock.set(1.0)
    assert clock.now() == 5.0
