"""Lanes: the order in which ready requests of a worker pool are dispatched (pure).

``tier-priority``: six strict lanes (``sluiceway.wire.lanes``); inside a lane,
round-robin across queues; inside a queue, earliest deadline first (ties by arrival).
``random-robin``: no lanes; a queue is picked at random among those with ready work
(upstream's behaviour), earliest deadline first inside it.

The scheduler holds only what ingest has already taken from the broker, which is bounded near
the worker count; it never awaits and never reads a clock.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, Literal, NamedTuple, TypeVar

from sluiceway.wire.lanes import LANES

__all__ = ["LaneScheduler", "Ordering", "Picked"]

T = TypeVar("T")
Ordering = Literal["tier-priority", "random-robin"]


class Picked(NamedTuple, Generic[T]):
    """An item taken from the scheduler with the lane and queue it came from (a tuple: one
    per dispatched request, built in C)."""

    item: T
    lane: int
    queue: str


@dataclass(slots=True)
class _Lane(Generic[T]):
    heaps: dict[str, list[tuple[float, int, T]]] = field(default_factory=dict)
    rotation: deque[str] = field(default_factory=deque)
    size: int = 0


class LaneScheduler(Generic[T]):
    """Ready items of one worker pool, ordered by lane, queue rotation and deadline."""

    def __init__(self, ordering: Ordering = "tier-priority", *, rng: random.Random | None = None):
        self._ordering = ordering
        self._rng = rng or random.Random()
        self._lanes: list[_Lane[T]] = [_Lane() for _ in LANES]
        self._seq = itertools.count()
        self._per_queue: dict[str, int] = {}
        self._size = 0  # kept, not summed: workers ask on every take

    def __len__(self) -> int:
        return self._size

    @property
    def ordering(self) -> Ordering:
        return self._ordering

    def count_by_lane(self) -> list[int]:
        """How many items wait in each lane (index 0 first)."""
        return [lane.size for lane in self._lanes]

    def count_for_queue(self, queue: str) -> int:
        """How many items of ``queue`` wait."""
        return self._per_queue.get(queue, 0)

    def add(self, item: T, *, lane: int, queue: str, deadline: float) -> None:
        """Add a ready item; ``deadline`` in Unix seconds orders it inside its queue."""
        target = self._lanes[0 if self._ordering == "random-robin" else lane]
        heap = target.heaps.get(queue)
        if heap is None:
            heap = target.heaps[queue] = []
            target.rotation.append(queue)
        heapq.heappush(heap, (deadline, next(self._seq), item))
        target.size += 1
        self._size += 1
        self._per_queue[queue] = self._per_queue.get(queue, 0) + 1

    def pop(self) -> Picked[T] | None:
        """The next item to dispatch, or None when nothing waits."""
        for index, lane in enumerate(self._lanes):
            if lane.size:
                queue = self._next_queue(lane)
                return Picked(self._take(lane, queue), index, queue)
        return None

    def drain(self) -> Iterator[T]:
        """Remove and yield every waiting item (shutdown)."""
        while (picked := self.pop()) is not None:
            yield picked.item

    def drain_queue(self, queue: str) -> list[T]:
        """Remove and return every waiting item of ``queue`` (the queue was removed)."""
        out: list[T] = []
        for lane in self._lanes:
            heap = lane.heaps.pop(queue, None)
            if heap is None:
                continue
            lane.rotation.remove(queue)
            lane.size -= len(heap)
            self._size -= len(heap)
            out.extend(item for _, _, item in sorted(heap))
        self._per_queue.pop(queue, None)
        return out

    def _next_queue(self, lane: _Lane[T]) -> str:
        # The rotation holds exactly the queues with waiting items (``_take`` drops the rest).
        if self._ordering == "random-robin":
            return self._rng.choice(lane.rotation)
        queue = lane.rotation[0]
        lane.rotation.rotate(-1)
        return queue

    def _take(self, lane: _Lane[T], queue: str) -> T:
        heap = lane.heaps[queue]
        _, _, item = heapq.heappop(heap)
        if not heap:
            del lane.heaps[queue]
            lane.rotation.remove(queue)
        lane.size -= 1
        self._size -= 1
        self._per_queue[queue] -= 1
        return item
