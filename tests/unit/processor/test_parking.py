"""Parked workers re-try their gate one at a time, best first, each once per change."""

from __future__ import annotations

import asyncio

import pytest

from sluiceway.processor.parking import ParkingLot, Rank


async def park(lot: ParkingLot, rank: Rank, woken: list[Rank]) -> None:
    """A worker that re-tries once when woken and then leaves (its attempt admitted)."""
    await lot.wait(rank, since=lot.generation)
    woken.append(rank)
    lot.pass_turn()


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_a_change_wakes_the_parked_workers_best_first_one_at_a_time() -> None:
    lot, woken = ParkingLot(), []
    ranks: list[Rank] = [(3, -50.0), (1, -10.0), (1, -30.0), (2, 5.0)]  # lane, queue order
    tasks = [asyncio.create_task(park(lot, r, woken)) for r in ranks]
    await settle()
    assert len(lot) == 4 and woken == []
    lot.fire()
    await asyncio.gather(*tasks)
    # lane 1 before 2 before 3; inside lane 1 the newest first (its queue read newest first)
    assert woken == [(1, -30.0), (1, -10.0), (2, 5.0), (3, -50.0)]
    assert len(lot) == 0


async def test_each_parked_worker_tries_once_per_change() -> None:
    lot = ParkingLot()
    tries: list[int] = []

    async def stays_parked(name: int) -> None:
        seen = lot.generation
        while True:  # its gate keeps saying wait
            if not await lot.wait((0, float(name)), 5.0, since=seen):
                return
            tries.append(name)
            seen = lot.generation

    tasks = [asyncio.create_task(stays_parked(n)) for n in range(3)]
    await settle()
    lot.fire()
    await settle()
    assert tries == [0, 1, 2]  # each once, in order, then all parked again
    lot.fire()
    await settle()
    assert tries == [0, 1, 2, 0, 1, 2]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_fire_during_the_gate_call_is_not_missed() -> None:
    lot = ParkingLot()
    seen = lot.generation
    lot.fire()  # a request finished while this worker asked its gate
    assert await lot.wait((0, 0.0), 5.0, since=seen) is True


async def test_a_parked_worker_gives_up_after_its_backstop() -> None:
    lot = ParkingLot()
    assert await lot.wait((0, 0.0), 0.01, since=lot.generation) is False
    assert len(lot) == 0


async def test_a_worker_cancelled_after_its_wake_up_passes_the_turn_on() -> None:
    lot, woken = ParkingLot(), []
    first = asyncio.create_task(lot.wait((0, 0.0), since=lot.generation))
    second = asyncio.create_task(park(lot, (1, 0.0), woken))
    await settle()
    lot.fire()  # wakes ``first`` ...
    first.cancel()  # ... which is cancelled before it runs: ``second`` gets the turn
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 5)
    assert woken == [(1, 0.0)]
