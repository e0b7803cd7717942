"""The asyncio shell around :class:`FlowController`: ``enqueue_and_wait`` for the router.

Event-driven: a cycle runs on every arrival (:meth:`FlowAdapter.enqueue_and_wait`), every
completion (:meth:`FlowAdapter.finished`) and every capacity change the router reports
(:meth:`FlowAdapter.kick`); one timer task wakes only at the controller's next deadline (TTL
expiry, eviction timeout or cooling). There is no fixed tick, so a backlog drains in one cycle
as soon as capacity frees.

Eviction: ids the controller picks are handed to ``on_evict``; the router cancels those streams
and calls :meth:`FlowAdapter.finished` when each one has ended (the confirmation).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from sluiceway.clock import Clock
from sluiceway.flowcontrol.base import CapacityView, Finalized, Request, Usage
from sluiceway.flowcontrol.controller import Cycle, FlowController
from sluiceway.flowcontrol.eviction import Revocation

__all__ = ["FlowAdapter"]


class FlowAdapter:
    """``capacity()`` returns the pool's current view (the router builds it from its endpoint
    snapshots with a detector). ``on_cycle`` sees every cycle (metrics, in-flight credit)."""

    def __init__(
        self,
        controller: FlowController,
        clock: Clock,
        capacity: Callable[[], CapacityView],
        *,
        on_evict: Callable[[str], None] | None = None,
        on_cycle: Callable[[Cycle], None] | None = None,
    ) -> None:
        self.controller = controller
        self._clock = clock
        self._capacity = capacity
        self._on_evict = on_evict
        self._on_cycle = on_cycle
        self._waiters: dict[str, asyncio.Future[Finalized]] = {}
        self._wake = asyncio.Event()
        self._timer_at: float | None = None
        self._timer: asyncio.Task[None] | None = None

    async def enqueue_and_wait(self, request: Request) -> Finalized:
        """Queue ``request`` and wait for its one outcome. Cancelling the caller (client gone)
        removes a queued request at once, or ends an in-flight one, and re-raises."""
        rejected = self.controller.add(request, self._clock.now())
        if rejected is not None:
            return rejected
        fut: asyncio.Future[Finalized] = asyncio.get_running_loop().create_future()
        self._waiters[request.request_id] = fut
        self.kick()
        try:
            return await fut
        except asyncio.CancelledError:
            self._waiters.pop(request.request_id, None)
            self.controller.on_cancelled(request.request_id, self._clock.now())
            self.kick()
            raise

    def finished(self, request_id: str, usage: Usage | None = None) -> Revocation | None:
        """A dispatched request's stream ended (evicted ones too); frees capacity."""
        rev = self.controller.on_finished(request_id, self._clock.now(), usage)
        self.kick()
        return rev

    def cancel(self, request_id: str) -> None:
        """The client went away while queued: its waiter gets EvictedContextCancelled."""
        done = self.controller.on_cancelled(request_id, self._clock.now())
        if done is not None:
            self._resolve(done)
        self.kick()

    def kick(self) -> Cycle:
        """Run one dispatch cycle now and deliver its outcomes."""
        cycle = self.controller.next_dispatches(self._clock.now(), self._capacity())
        for done in cycle.dispatched:
            self._resolve(done)
        for done in cycle.dropped:
            self._resolve(done)
        if cycle.evict and self._on_evict is not None:
            for rid in cycle.evict:
                self._on_evict(rid)
        if self._on_cycle is not None:
            self._on_cycle(cycle)
        self._rearm()
        return cycle

    def start(self) -> None:
        """Start the deadline timer (idempotent); needs a running loop."""
        if self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._run_timer())

    async def close(self) -> None:
        """Stop the timer and finalize every queued request (shutting down)."""
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
            self._timer = None
        for done in self.controller.shutdown(self._clock.now()):
            self._resolve(done)

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def _resolve(self, done: Finalized) -> None:
        fut = self._waiters.pop(done.request_id, None)
        if fut is not None and not fut.done():
            fut.set_result(done)

    def _rearm(self) -> None:
        due = self.controller.next_deadline()
        if due is not None and (self._timer_at is None or due < self._timer_at):
            self._wake.set()

    async def _run_timer(self) -> None:
        while True:
            self._wake.clear()
            self._timer_at = self.controller.next_deadline()
            if self._timer_at is None:
                await self._wake.wait()
            else:
                await self._sleep_or_wake(self._timer_at - self._clock.now())
            self._timer_at = None
            self.kick()

    async def _sleep_or_wake(self, delay: float) -> None:
        if delay <= 0:
            return
        sleeper = asyncio.ensure_future(self._clock.sleep(delay))
        waker = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()
