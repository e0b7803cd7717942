"""A worker pool's ready buffer: ingest puts claimed requests in, workers take them out in
lane order. Bounded per queue so that the memory held stays near the worker count while every
queue keeps its best candidates visible to the lane order."""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable

from sluiceway.gates.base import Gate
from sluiceway.processor.lane_scheduler import LaneScheduler, Ordering
from sluiceway.processor.parking import ParkingLot
from sluiceway.processor.specs import PoolSpec
from sluiceway.processor.work_item import WorkItem

__all__ = ["ReadyBuffer"]


class ReadyBuffer:
    """Ready buffer, busy count and wake-ups of one worker pool."""

    def __init__(
        self,
        spec: PoolSpec,
        *,
        ordering: Ordering,
        queues: int,
        gate: Gate | None = None,
        buffer_per_queue: int | None = None,
        on_room: Callable[[], None] = lambda: None,
    ) -> None:
        self.spec = spec
        self.gate = gate
        self.scheduler: LaneScheduler[WorkItem] = LaneScheduler(ordering)
        self._fixed_target = buffer_per_queue is not None
        self.target = buffer_per_queue or math.ceil(spec.workers / max(1, queues)) + 1
        self.busy = 0  # items taken by workers and not yet recorded
        self.dispatching = 0  # upstream attempts in flight (budget targets count these)
        # an item finished or the gate's signal moved: parked workers re-try, best first
        self.capacity_changed = ParkingLot()
        # Workers waiting for an item, oldest first: a put wakes one (no lock, no condition).
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False
        self._on_room = on_room  # called when a queue's buffer falls to ``refill_at``

    @property
    def closed(self) -> bool:
        return self._closed

    def room_for(self, queue: str) -> int:
        """How many more ready items ``queue`` may add."""
        return 0 if self._closed else max(0, self.target - self.scheduler.count_for_queue(queue))

    def put(self, item: WorkItem, *, newest_first: bool = False) -> None:
        """Add a claimed request. Among its queue's ready items it goes by deadline, latest
        first when ``newest_first`` (its queue is read newest first: ``queue_order``), so the
        buffer keeps the queue's order instead of holding back what was claimed first."""
        rank = -item.deadline if newest_first else item.deadline
        item.rank = (item.lane.index, rank)  # parked at the gate, it re-tries in this order too
        self.scheduler.add(item, lane=item.lane.index, queue=item.queue.queue_name, deadline=rank)
        self._wake_one()

    async def take(self) -> WorkItem | None:
        """The next item in lane order; None once the pool is closed and empty. A ready item
        is taken at once; a worker waits only when none is."""
        while not self._has_work():
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled: the wake-up goes to the next
                raise
        picked = self.scheduler.pop()
        if picked is None:
            return None
        self.busy += 1
        if self.scheduler.count_for_queue(picked.queue) == self.refill_at:
            self._on_room()
        return picked.item

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _has_work(self) -> bool:
        return len(self.scheduler) > 0 or self._closed

    @property
    def refill_at(self) -> int:
        """Ingest is woken when a queue's buffered count falls to this (half the target), so
        it refills in batches (one peek and one claim call for several requests) instead of
        one request per call."""
        return self.target // 2

    def finished(self) -> None:
        """A taken item is done (recorded, retried or released)."""
        self.busy -= 1
        self.capacity_changed.fire()

    def resize(self, queues: int) -> None:
        """The pool now feeds ``queues`` queues (hot reload): recompute the per-queue target."""
        if not self._fixed_target:
            self.target = math.ceil(self.spec.workers / max(1, queues)) + 1

    def remove_queue(self, queue: str) -> list[WorkItem]:
        """Take a removed queue's ready items out (to be released)."""
        return self.scheduler.drain_queue(queue)

    async def close(self) -> list[WorkItem]:
        """Stop handing out items; return the ones still buffered (to be released)."""
        self._closed = True
        items = list(self.scheduler.drain())
        while self._waiters:
            self._wake_one()
        self.capacity_changed.fire()
        return items
