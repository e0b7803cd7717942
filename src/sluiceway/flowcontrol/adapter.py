"""The asyncio shell around :class:`FlowController`: a waiter per queued request, and a timer.

It never calls out. Its owner (the router) runs a cycle with :meth:`FlowAdapter.cycle`, giving
the pool's capacity view, on every arrival, completion and capacity change, and when
:meth:`FlowAdapter.until_due` returns (a TTL expiry, eviction timeout or cooling is due). The
cycle wakes the waiters it dispatched or dropped and returns the decision (the
:class:`~sluiceway.flowcontrol.controller.Cycle`): the owner applies it (an endpoint for each
dispatched request, the evictions) before any waiter runs, since a woken waiter resumes only
at the owner's next await. There is no fixed tick, so a backlog drains in one cycle as soon as
capacity frees.

Eviction: the owner stops the streams a cycle names and calls :meth:`FlowAdapter.finished` when
each one has ended (the confirmation).
"""

from __future__ import annotations

import asyncio

from sluiceway.clock import Clock
from sluiceway.flowcontrol.base import CapacityView, Finalized, Request, Usage
from sluiceway.flowcontrol.controller import Cycle, FlowController
from sluiceway.flowcontrol.eviction import Revocation

__all__ = ["FlowAdapter"]


class FlowAdapter:
    """Waiters for the controller's outcomes, and its deadlines as an awaitable."""

    def __init__(self, controller: FlowController, clock: Clock) -> None:
        self.controller = controller
        self._clock = clock
        self._waiters: dict[str, asyncio.Future[Finalized]] = {}
        self._wake = asyncio.Event()
        self._timer_at: float | None = None

    def enqueue(self, request: Request) -> asyncio.Future[Finalized]:
        """Queue ``request``; the future holds its one outcome (already there when rejected).
        The owner runs a cycle next, then awaits :meth:`wait`."""
        fut: asyncio.Future[Finalized] = asyncio.get_running_loop().create_future()
        rejected = self.controller.add(request, self._clock.now())
        if rejected is not None:
            fut.set_result(rejected)
        else:
            self._waiters[request.request_id] = fut
        return fut

    async def wait(self, request_id: str, outcome: asyncio.Future[Finalized]) -> Finalized:
        """Await ``outcome``. Cancelled (client gone, evicted), a queued request is removed at
        once, an in-flight one counted as ended, and the cancellation goes on: the owner runs
        a cycle, since capacity may have freed."""
        try:
            return await outcome
        except asyncio.CancelledError:
            self._waiters.pop(request_id, None)
            self.controller.on_cancelled(request_id, self._clock.now())
            raise

    def cycle(self, capacity: CapacityView) -> Cycle:
        """Run one dispatch cycle against ``capacity``, wake its waiters, return its decision."""
        cycle = self.controller.next_dispatches(self._clock.now(), capacity)
        for done in cycle.dispatched:
            self._resolve(done)
        for done in cycle.dropped:
            self._resolve(done)
        due = self.controller.next_deadline()
        if due is not None and (self._timer_at is None or due < self._timer_at):
            self._wake.set()
        return cycle

    def finished(self, request_id: str, usage: Usage | None = None) -> Revocation | None:
        """A dispatched request's stream ended (evicted ones too); the owner runs a cycle."""
        return self.controller.on_finished(request_id, self._clock.now(), usage)

    async def until_due(self) -> None:
        """Return when the controller's next deadline has come, or when a cycle set an earlier
        one: the owner then runs a cycle. Without deadlines it waits for one to appear."""
        self._wake.clear()
        self._timer_at = self.controller.next_deadline()
        try:
            if self._timer_at is None:
                await self._wake.wait()
            else:
                await self._sleep_or_wake(self._timer_at - self._clock.now())
        finally:
            self._timer_at = None

    def close(self) -> None:
        """Stop accepting; every queued request is finalized (shutting down)."""
        for done in self.controller.shutdown(self._clock.now()):
            self._resolve(done)

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def _resolve(self, done: Finalized) -> None:
        fut = self._waiters.pop(done.request_id, None)
        if fut is not None and not fut.done():
            fut.set_result(done)

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
