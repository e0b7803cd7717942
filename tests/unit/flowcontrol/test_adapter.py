"""The asyncio shell: enqueue and wait, completion, disconnects, the deadline timer, a cycle's
decision returned (evictions included), backlog drain and shutdown; on the virtual clock.

``Shell`` plays the owner's part as the router does: a cycle after every event, and one
whenever ``until_due`` returns."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.flowcontrol import (
    BandSettings,
    CapacityView,
    EvictionSettings,
    Finalized,
    FlowController,
    FlowControlSettings,
    Outcome,
    Request,
)
from sluiceway.flowcontrol.adapter import FlowAdapter
from sluiceway.flowcontrol.controller import Cycle
from sluiceway.flowcontrol.eviction import Revocation


class Shell:
    def __init__(self, slots: int, **kw: object) -> None:
        self.clock = VirtualClock(start=1000.0)
        self.fc = FlowController(FlowControlSettings(**kw))  # type: ignore[arg-type]
        self.slots = slots
        self.evicted: list[str] = []
        self.adapter = FlowAdapter(self.fc, self.clock)
        self.timer: asyncio.Task[None] | None = None

    def kick(self) -> Cycle:
        view = CapacityView(self.fc.totals.inflight / self.slots, request_cost=1 / self.slots)
        cycle = self.adapter.cycle(view)
        self.evicted.extend(cycle.evict)
        return cycle

    async def admit(self, request: Request) -> Finalized:
        outcome = self.adapter.enqueue(request)
        self.kick()
        try:
            return await self.adapter.wait(request.request_id, outcome)
        except asyncio.CancelledError:
            self.kick()
            raise

    def wait(self, rid: str, prio: int = 0) -> asyncio.Task[Finalized]:
        return asyncio.ensure_future(self.admit(Request(rid, "t", prio)))

    def finished(self, rid: str) -> Revocation | None:
        rev = self.adapter.finished(rid)
        self.kick()
        return rev

    def start_timer(self) -> None:
        async def run() -> None:
            while True:
                await self.adapter.until_due()
                self.kick()

        self.timer = asyncio.ensure_future(run())

    async def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.timer
        self.adapter.close()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_dispatch_when_capacity_and_wait_for_completion() -> None:
    s = Shell(slots=1)
    first = await s.admit(Request("a"))
    assert first.outcome is Outcome.DISPATCHED
    second = s.wait("b")
    await settle()
    assert not second.done() and s.adapter.waiting == 1
    s.finished("a")
    assert (await second).outcome is Outcome.DISPATCHED


async def test_nothing_moves_without_a_cycle() -> None:
    """The adapter never runs a cycle by itself: the owner decides when, with its view."""
    s = Shell(slots=1)
    outcome = s.adapter.enqueue(Request("a"))
    await settle()
    assert not outcome.done() and s.fc.totals.queued == 1
    cycle = s.kick()
    assert [d.request_id for d in cycle.dispatched] == ["a"] and outcome.done()


async def test_a_rejection_is_there_at_once() -> None:
    s = Shell(slots=1, max_requests=1)
    s.adapter.enqueue(Request("a"))
    late = s.adapter.enqueue(Request("b"))
    assert late.done() and late.result().outcome is Outcome.REJECTED_CAPACITY


async def test_caller_cancellation_removes_the_queued_request() -> None:
    s = Shell(slots=1)
    await s.admit(Request("a"))
    task = s.wait("b")
    await settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert s.fc.totals.queued == 0 and s.adapter.waiting == 0


async def test_ttl_expiry_fires_from_the_timer_without_events() -> None:
    s = Shell(slots=1, default_ttl=30.0)
    s.start_timer()
    await s.admit(Request("a"))
    task = s.wait("b")
    await settle()
    s.clock.advance(29.0)
    await settle()
    assert not task.done()
    s.clock.advance(1.0)
    await settle()
    assert task.done() and task.result().outcome is Outcome.EVICTED_TTL
    await s.close()


async def test_a_cycle_names_the_evictions_and_confirmation_frees_the_slot() -> None:
    bands = (BandSettings(100), BandSettings(-10))
    s = Shell(slots=2, bands=bands, eviction=EvictionSettings(enabled=True, grace=0.0))
    await s.admit(Request("b0", "t", -10))
    await s.admit(Request("b1", "t", -10))
    task = s.wait("rt", 100)
    await settle()
    assert s.evicted == ["b1"] and not task.done()
    rev = s.finished("b1")  # the evicted stream ended
    assert rev is not None and rev.outcome == "confirmed"
    assert (await task).outcome is Outcome.DISPATCHED


async def test_backlog_drains_in_one_cycle_once_capacity_frees() -> None:
    adapter = FlowAdapter(FlowController(FlowControlSettings()), VirtualClock())
    requests = [Request(f"r{i}") for i in range(200)]
    tasks = [
        asyncio.ensure_future(adapter.wait(r.request_id, adapter.enqueue(r))) for r in requests
    ]
    assert not adapter.cycle(CapacityView(1.0)).dispatched
    await settle()
    assert adapter.waiting == 200
    assert len(adapter.cycle(CapacityView(0.0)).dispatched) == 200
    results = await asyncio.gather(*tasks)
    assert {r.outcome for r in results} == {Outcome.DISPATCHED}


async def test_close_answers_everyone_shutting_down() -> None:
    s = Shell(slots=1)
    s.start_timer()
    await s.admit(Request("a"))
    task = s.wait("b")
    await settle()
    await s.close()
    done = await task
    assert done.outcome is Outcome.EVICTED_OTHER and done.http().status == 503  # type: ignore[union-attr]
    late = await s.admit(Request("c"))
    assert late.outcome is Outcome.REJECTED_OTHER
