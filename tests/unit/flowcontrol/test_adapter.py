"""The asyncio shell: enqueue_and_wait, completion, disconnects, TTL timer, eviction callback,
backlog drain and shutdown; on the virtual clock."""

from __future__ import annotations

import asyncio

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.flowcontrol import (
    BandSettings,
    CapacityView,
    EvictionSettings,
    FlowController,
    FlowControlSettings,
    Outcome,
    Request,
)
from sluiceway.flowcontrol.adapter import FlowAdapter


class Shell:
    def __init__(self, slots: int, **kw: object) -> None:
        self.clock = VirtualClock(start=1000.0)
        self.fc = FlowController(FlowControlSettings(**kw))  # type: ignore[arg-type]
        self.slots = slots
        self.evicted: list[str] = []
        self.adapter = FlowAdapter(self.fc, self.clock, self.view, on_evict=self.evicted.append)

    def view(self) -> CapacityView:
        return CapacityView(self.fc.totals.inflight / self.slots, request_cost=1 / self.slots)

    def wait(self, rid: str, prio: int = 0) -> asyncio.Task:  # type: ignore[type-arg]
        return asyncio.ensure_future(self.adapter.enqueue_and_wait(Request(rid, "t", prio)))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_dispatch_when_capacity_and_wait_for_completion() -> None:
    s = Shell(slots=1)
    first = await s.adapter.enqueue_and_wait(Request("a"))
    assert first.outcome is Outcome.DISPATCHED
    second = s.wait("b")
    await settle()
    assert not second.done() and s.adapter.waiting == 1
    s.adapter.finished("a")
    assert (await second).outcome is Outcome.DISPATCHED


async def test_caller_cancellation_removes_the_queued_request() -> None:
    s = Shell(slots=1)
    await s.adapter.enqueue_and_wait(Request("a"))
    task = s.wait("b")
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert s.fc.totals.queued == 0 and s.adapter.waiting == 0


async def test_explicit_disconnect_answers_the_waiter() -> None:
    s = Shell(slots=1)
    await s.adapter.enqueue_and_wait(Request("a"))
    task = s.wait("b")
    await settle()
    s.adapter.cancel("b")
    assert (await task).outcome is Outcome.EVICTED_CONTEXT_CANCELLED


async def test_ttl_expiry_fires_from_the_timer_without_events() -> None:
    s = Shell(slots=1, default_ttl=30.0)
    s.adapter.start()
    await s.adapter.enqueue_and_wait(Request("a"))
    task = s.wait("b")
    await settle()
    s.clock.advance(29.0)
    await settle()
    assert not task.done()
    s.clock.advance(1.0)
    await settle()
    assert task.done() and task.result().outcome is Outcome.EVICTED_TTL
    await s.adapter.close()


async def test_eviction_ids_reach_the_router_and_confirmation_frees_the_slot() -> None:
    bands = (BandSettings(100), BandSettings(-10))
    s = Shell(slots=2, bands=bands, eviction=EvictionSettings(enabled=True, grace=0.0))
    await s.adapter.enqueue_and_wait(Request("b0", "t", -10))
    await s.adapter.enqueue_and_wait(Request("b1", "t", -10))
    task = s.wait("rt", 100)
    await settle()
    assert s.evicted == ["b1"] and not task.done()
    rev = s.adapter.finished("b1")  # the evicted stream ended
    assert rev is not None and rev.outcome == "confirmed"
    assert (await task).outcome is Outcome.DISPATCHED


async def test_backlog_drains_in_one_cycle_once_capacity_frees() -> None:
    clock = VirtualClock()
    fc = FlowController(FlowControlSettings())
    saturation = [1.0]
    adapter = FlowAdapter(fc, clock, lambda: CapacityView(saturation[0]))
    tasks = [asyncio.ensure_future(adapter.enqueue_and_wait(Request(f"r{i}"))) for i in range(200)]
    await settle()
    assert adapter.waiting == 200
    saturation[0] = 0.0
    assert len(adapter.kick().dispatched) == 200
    results = await asyncio.gather(*tasks)
    assert {r.outcome for r in results} == {Outcome.DISPATCHED}


async def test_close_answers_everyone_shutting_down() -> None:
    s = Shell(slots=1)
    s.adapter.start()
    await s.adapter.enqueue_and_wait(Request("a"))
    task = s.wait("b")
    await settle()
    await s.adapter.close()
    done = await task
    assert done.outcome is Outcome.EVICTED_OTHER and done.http().status == 503  # type: ignore[union-attr]
    late = await s.adapter.enqueue_and_wait(Request("c"))
    assert late.outcome is Outcome.REJECTED_OTHER
