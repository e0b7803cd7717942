"""Wake-up mode from notify-keyspace-events flags, channels, and local wake-ups."""

from __future__ import annotations

import asyncio

import pytest

from sluiceway.broker.wakeup import PollWaker, WakeMode, mode_for_flags, subscription_for


@pytest.mark.parametrize(
    ("flags", "mode"),
    [
        ("", WakeMode.POLLING),
        ("Kz", WakeMode.EVENTS),
        ("Ez", WakeMode.EVENTS),
        ("KEA", WakeMode.EVENTS),
        ("AK", WakeMode.EVENTS),
        ("K$", WakeMode.POLLING),
        ("z", WakeMode.POLLING),
        ("Elg", WakeMode.POLLING),
    ],
)
def test_mode_needs_sorted_set_events_on_a_channel(flags: str, mode: WakeMode) -> None:
    assert mode_for_flags(flags) is mode


def test_keyspace_flags_subscribe_one_channel_per_key() -> None:
    assert subscription_for("Kz", 2, ["a", "b"]) == ["__keyspace@2__:a", "__keyspace@2__:b"]
    assert subscription_for("Ez", 0, ["a", "b"]) == ["__keyevent@0__:zadd"]


async def test_poll_waker_times_out_without_arrivals() -> None:
    assert await PollWaker().wait(["q"], 0.01) is False


async def test_poll_waker_wakes_on_a_local_arrival_for_a_watched_key_only() -> None:
    waker = PollWaker()
    waiter = asyncio.create_task(waker.wait(["q1", "q2"], 10.0))
    await asyncio.sleep(0)
    waker.notify("other")
    await asyncio.sleep(0)
    assert not waiter.done()
    waker.notify("q2")
    assert await asyncio.wait_for(waiter, 1.0) is True
