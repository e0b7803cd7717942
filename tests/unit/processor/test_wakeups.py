"""Pulse: wakes every waiter; ``since`` catches a fire that happened before the wait. Wakeups:
each named event wakes exactly the waiters its table says."""

from __future__ import annotations

import asyncio

from sluiceway.processor.wakeups import Pulse, Wakeups


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


def _generations(wake: Wakeups) -> tuple[int, int, int]:
    return wake.work.generation, wake.claims.generation, wake.retries.generation


def test_each_event_wakes_the_waiters_its_table_names() -> None:
    cases = [
        (Wakeups.room_in_buffer, (1, 0, 0)),  # ingest
        (Wakeups.gate_may_admit, (1, 0, 0)),
        (Wakeups.entries_returned, (1, 0, 0)),
        (Wakeups.queues_changed, (1, 0, 0)),
        (Wakeups.retry_parked, (0, 0, 1)),  # the retry mover only
    ]
    for event, expected in cases:
        wake = Wakeups()
        event(wake)
        assert _generations(wake) == expected, event.__name__


def test_a_released_claim_wakes_ingest_only_when_its_request_passed_a_queue_gate() -> None:
    ungated, gated = Wakeups(), Wakeups()
    ungated.claim_released(gated=False)
    gated.claim_released(gated=True)
    assert _generations(ungated) == (0, 1, 0)  # the drain; the buffer wakes ingest itself
    assert _generations(gated) == (1, 1, 0)  # the gate's budget or quota slot is free
