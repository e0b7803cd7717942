"""The pool's ready buffer: room per queue, lane order, wake-ups, close."""

from __future__ import annotations

import asyncio
from typing import Any

from sluiceway.processor.ready_buffer import ReadyBuffer
from sluiceway.processor.specs import PoolSpec
from sluiceway.wire.lanes import LANES


class Item:
    """Just what the pool reads of a work item."""

    def __init__(self, name: str, lane: int, queue: str, deadline: float = 0.0) -> None:
        self.name, self.lane, self.deadline = name, LANES[lane], deadline
        self.queue = type("Q", (), {"queue_name": queue})()


def pool(workers: int = 2, queues: int = 2, **kw: Any) -> ReadyBuffer:
    return ReadyBuffer(PoolSpec("p", workers), ordering="tier-priority", queues=queues, **kw)


async def test_room_is_bounded_per_queue_near_the_worker_count() -> None:
    p = pool(workers=4, queues=2)
    assert p.target == 3 and p.room_for("a") == 3
    for i in range(3):
        p.put(Item(f"a{i}", 5, "a"))  # type: ignore[arg-type]
    assert p.room_for("a") == 0 and p.room_for("b") == 3


async def test_take_follows_lanes_and_signals_room_when_a_full_queue_drains() -> None:
    rooms: list[str] = []
    p = pool(workers=1, queues=1, on_room=lambda: rooms.append("room"))
    p.put(Item("low", 5, "a"))  # type: ignore[arg-type]
    p.put(Item("high", 0, "a"))  # type: ignore[arg-type]
    assert p.room_for("a") == 0
    taken = await p.take()
    assert taken is not None and taken.name == "high"  # type: ignore[attr-defined]
    assert rooms == ["room"] and p.busy == 1
    p.finished()
    assert p.busy == 0


async def test_close_hands_back_buffered_items_and_wakes_takers() -> None:
    p = pool()
    waiter = asyncio.create_task(p.take())
    await asyncio.sleep(0)
    p.put(Item("x", 2, "a"))  # type: ignore[arg-type]
    assert await waiter is not None
    p.put(Item("y", 2, "a"))  # type: ignore[arg-type]
    idle = asyncio.create_task(p.take())
    left = await p.close()
    assert [i.name for i in left] == ["y"]  # type: ignore[attr-defined]
    assert await idle is None and p.room_for("a") == 0


async def test_ingest_is_woken_once_the_buffer_is_half_drained_not_per_take() -> None:
    rooms: list[int] = []
    p: ReadyBuffer = pool(
        workers=9, queues=1, on_room=lambda: rooms.append(len(p.scheduler))
    )  # target 10
    for i in range(10):
        p.put(Item(f"a{i}", 5, "a"))  # type: ignore[arg-type]
    for _ in range(10):
        await p.take()
    assert p.refill_at == 5 and rooms == [5]


async def test_each_put_wakes_one_waiting_taker_and_none_is_lost() -> None:
    p = pool(workers=3, queues=1, buffer_per_queue=10)
    takers = [asyncio.create_task(p.take()) for _ in range(3)]
    await asyncio.sleep(0)  # all three wait on the empty buffer
    assert not any(t.done() for t in takers)
    for i in range(3):
        p.put(Item(f"i{i}", 5, "a"))  # type: ignore[arg-type]
    taken = await asyncio.wait_for(asyncio.gather(*takers), timeout=5)
    assert sorted(t.name for t in taken) == ["i0", "i1", "i2"]  # type: ignore[union-attr]
    p.put(Item("ready", 5, "a"))  # type: ignore[arg-type]
    again = await p.take()  # an item is ready: taken without waiting
    assert again is not None and again.name == "ready"  # type: ignore[attr-defined]


async def test_a_taker_cancelled_after_its_wake_up_passes_the_item_on() -> None:
    p = pool(workers=2, queues=1, buffer_per_queue=10)
    first = asyncio.create_task(p.take())
    second = asyncio.create_task(p.take())
    await asyncio.sleep(0)  # both wait, ``first`` longest
    p.put(Item("only", 5, "a"))  # type: ignore[arg-type]
    first.cancel()  # woken, but cancelled before it ran
    taken = await asyncio.wait_for(second, timeout=5)
    assert taken is not None and taken.name == "only"  # type: ignore[attr-defined]
    assert first.cancelled()


async def test_a_queue_read_newest_first_is_taken_latest_deadline_first() -> None:
    """Overload (queue_order): what was claimed newest first is not held back behind the older
    entries a draining backlog keeps claiming; lanes stay strict."""
    p = pool(workers=4, queues=1)
    for name, lane, deadline in (("new", 5, 300.0), ("old", 5, 100.0), ("high", 0, 50.0)):
        p.put(Item(name, lane, "a", deadline), newest_first=True)  # type: ignore[arg-type]
    taken = [await p.take() for _ in range(3)]
    assert [i.name for i in taken] == ["high", "new", "old"]  # type: ignore[union-attr]
