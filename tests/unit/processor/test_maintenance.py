"""Heartbeat, reclaimer and retry mover over the memory broker on a virtual clock."""

from __future__ import annotations

import asyncio
import contextlib
import json

from sluiceway.broker.base import claim_key
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import VirtualClock
from sluiceway.gates.base import Holdings
from sluiceway.processor.maintenance import (
    heartbeat_interval,
    heartbeat_once,
    move_retries_once,
    reclaim_once,
    run_every,
    run_retry_mover,
    stop_tasks,
)
from sluiceway.processor.metrics import ProcessorMetrics, QueueLabels
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.specs import ProcessorSpec, QueueSpec
from sluiceway.processor.work_item import WorkItem
from sluiceway.wire import decode_envelope
from sluiceway.wire.lanes import LANES

NOW = 1_700_000_000.0
QUEUE = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw")


def member(request_id: str, deadline: float) -> str:
    data = {"id": request_id, "deadline": deadline}
    return json.dumps(
        {"internal": {"request_queue_name": "q"}, "request_kind": "plain", "data": data}
    )


def runtime(clock: VirtualClock, broker: MemoryBroker) -> Runtime:
    settings = ProcessorSpec(queues=[QUEUE], claim_lease=30.0, poll_interval=1.0)
    return Runtime(broker=broker, clock=clock, settings=settings, metrics=ProcessorMetrics())


async def claimed_item(rt: Runtime, request_id: str, deadline: float) -> WorkItem:
    await rt.broker.enqueue("q", [(member(request_id, deadline), deadline)])
    (entry,) = await rt.broker.peek("q", 1)
    envelope = decode_envelope(entry.member)
    claim = await rt.broker.claim(
        entry,
        key=claim_key(request_id, envelope.request_token),
        owner="o" * 16,
        lease_until=rt.lease_until(deadline),
    )
    assert claim is not None
    item = WorkItem(
        claim,
        envelope,
        QUEUE,
        LANES[5],
        QueueLabels("q", "q", "default"),
        "o" * 16,
        ingested_at=0.0,
        holdings=Holdings(),
    )
    rt.book.add(item)
    return item


def test_heartbeat_interval_is_a_third_of_the_lease_within_bounds() -> None:
    assert heartbeat_interval(300) == 30.0
    assert heartbeat_interval(30) == 10.0
    assert heartbeat_interval(1) == 1.0


async def test_heartbeat_keeps_claims_and_holdings_alive() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    rt = runtime(clock, broker)
    item = await claimed_item(rt, "a", NOW + 3600)
    renewed: list[float] = []

    async def release() -> None:
        return None

    async def renew(until: float) -> None:
        renewed.append(until)

    item.holdings.add(release, renew)
    clock.advance(20)
    assert await heartbeat_once(rt) == 0
    assert item.claim.lease_until == NOW + 50 and renewed == [NOW + 50]
    clock.advance(20)
    assert await reclaim_once(rt, ["q"]) == 0


async def test_lease_never_runs_past_five_minutes_after_the_deadline() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    rt = runtime(clock, broker)
    assert rt.lease_until(NOW + 10) == NOW + 30
    rt2 = Runtime(
        broker=broker,
        clock=clock,
        metrics=ProcessorMetrics(),
        settings=ProcessorSpec(queues=[QUEUE], claim_lease=3600),
    )
    assert rt2.lease_until(NOW + 10) == NOW + 310


async def test_lost_claims_are_reported_and_reclaimed_ones_return() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    rt = runtime(clock, broker)
    await claimed_item(rt, "a", NOW + 3600)
    clock.advance(31)
    assert await reclaim_once(rt, ["q"]) == 1
    assert await broker.backlog("q") == 1
    assert await heartbeat_once(rt) == 1


async def test_retry_mover_moves_when_due() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    rt = runtime(clock, broker)
    item = await claimed_item(rt, "a", NOW + 3600)
    assert await broker.retry_after(item.claim, member=item.claim.member, due=NOW + 5)
    assert await move_retries_once(rt, "q") == 0
    clock.advance(5)
    assert await move_retries_once(rt, "q") == 1
    (entry,) = await broker.peek("q", 1)
    assert entry.score == NOW + 3600


async def test_retry_mover_task_wakes_for_a_new_retry() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    rt = runtime(clock, broker)
    item = await claimed_item(rt, "a", NOW + 3600)
    mover = asyncio.create_task(run_retry_mover(rt, "q"))
    await asyncio.sleep(0.01)
    await broker.retry_after(item.claim, member=item.claim.member, due=NOW)
    rt.wake.retry_parked()
    arrived = await broker.wait_for_work(["q"], 2.0)
    mover.cancel()
    await asyncio.gather(mover, return_exceptions=True)
    assert arrived and await broker.backlog("q") == 1


async def test_retry_mover_ends_when_stopping_even_if_its_cancel_was_lost() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    rt = runtime(clock, broker)
    mover = asyncio.create_task(run_retry_mover(rt, "q"))
    await asyncio.sleep(0.01)
    rt.stopping = True  # no cancel: as if the broker client had swallowed it
    rt.wake.retry_parked()
    await asyncio.wait_for(mover, 2.0)


async def test_the_claim_book_counts_per_queue_once_per_claim() -> None:
    rt = runtime(VirtualClock(NOW), MemoryBroker())
    first = await claimed_item(rt, "a", NOW + 60)
    second = await claimed_item(rt, "b", NOW + 60)
    rt.book.add(first)  # a second add of the same claim is not a second request
    assert (len(rt.book), rt.book.count_for_queue("q"), rt.book.count_for_queue("x")) == (2, 2, 0)
    rt.book.remove(first)
    rt.book.remove(first)
    assert (len(rt.book), rt.book.count_for_queue("q")) == (1, 1)
    rt.book.remove(second)
    assert rt.book.count_for_queue("q") == 0


async def test_a_periodic_step_that_swallows_its_cancel_still_ends_the_task() -> None:
    """redis-py can absorb a cancel during a read; stopping must not wait for such a task."""
    rt = runtime(VirtualClock(NOW), MemoryBroker())
    inside = asyncio.Event()

    async def swallowing_step() -> None:
        inside.set()
        with contextlib.suppress(asyncio.CancelledError):  # as a library may, in its read
            await asyncio.sleep(3600)

    task = asyncio.create_task(run_every(rt, 15.0, swallowing_step, at_once=True))
    await inside.wait()
    await asyncio.wait_for(stop_tasks([task]), 5.0)  # hangs if the swallowed cancel is lost
    assert task.cancelled()
