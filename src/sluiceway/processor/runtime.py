"""State shared by the ingest, worker and maintenance tasks of one processor."""

from __future__ import annotations

import random
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sluiceway.broker.base import Broker
from sluiceway.clock import Clock
from sluiceway.gates.pool_share import SOLE, PoolShare
from sluiceway.processor.cancel_watch import CancelWatch
from sluiceway.processor.metrics import ProcessorMetrics
from sluiceway.processor.poison import FaultTally
from sluiceway.processor.results import HttpAnswer
from sluiceway.processor.service_time import ServiceTimes, ServiceTimeSettings
from sluiceway.processor.specs import ProcessorSpec
from sluiceway.processor.wakeups import Wakeups
from sluiceway.processor.work_item import WorkItem

__all__ = ["LEASE_PAST_DEADLINE", "AttemptMemory", "AttemptRecord", "ClaimBook", "Runtime"]

# Scaled seconds a claim lease may outlive its request's deadline: time to write the
# deadline's result (or the last answer) before a reclaimer may take the entry back.
LEASE_PAST_DEADLINE = 300.0


class ClaimBook:
    """Claims this process holds (buffered, parked or in flight), for the heartbeat."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], WorkItem] = {}
        self._per_queue: Counter[str] = Counter()  # ingest reads it per entry under a budget

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item: WorkItem) -> None:
        key = (item.claim.queue, item.claim.key)
        if key not in self._items:
            self._per_queue[item.claim.queue] += 1
        self._items[key] = item

    def remove(self, item: WorkItem) -> None:
        if self._items.pop((item.claim.queue, item.claim.key), None) is not None:
            self._per_queue[item.claim.queue] -= 1

    def __iter__(self) -> Iterator[WorkItem]:
        return iter(list(self._items.values()))

    def count_for_queue(self, queue: str) -> int:
        return self._per_queue[queue]


@dataclass(slots=True)
class AttemptRecord:
    """What one request generation's attempts so far left behind."""

    last_answer: HttpAnswer | None = None
    connect_errors: int = 0
    counted: bool = False  # request_total already counted this generation


class AttemptMemory:
    """Per request generation: the last HTTP answer and consecutive transport errors.

    Kept in process (bounded, oldest forgotten first): after a restart a request starts
    counting afresh, which only makes retries more generous.
    """

    def __init__(self, capacity: int = 50_000) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, str], AttemptRecord] = OrderedDict()

    def get(self, request_id: str, token: str) -> AttemptRecord:
        key = (request_id, token)
        entry = self._entries.pop(key, None) or AttemptRecord()
        self._entries[key] = entry
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return entry

    def last_answer(self, request_id: str, token: str) -> HttpAnswer | None:
        entry = self._entries.get((request_id, token))
        return None if entry is None else entry.last_answer

    def forget(self, request_id: str, token: str) -> None:
        self._entries.pop((request_id, token), None)


@dataclass
class Runtime:
    """What every task of one processor shares."""

    broker: Broker
    clock: Clock
    settings: ProcessorSpec
    metrics: ProcessorMetrics
    book: ClaimBook = field(default_factory=ClaimBook)
    memory: AttemptMemory = field(default_factory=AttemptMemory)
    rng: random.Random = field(default_factory=random.Random)
    wake: Wakeups = field(default_factory=Wakeups)  # who wakes whom: see wakeups.py
    cancels: CancelWatch = field(default_factory=CancelWatch)
    faults: FaultTally = field(default_factory=FaultTally)  # a request's repeated failures
    service: ServiceTimes = field(init=False)  # dispatch-to-answer times, per queue
    shares: Callable[[str], PoolShare] = lambda pool_id: SOLE  # among the pool's processors
    stopping: bool = False

    def __post_init__(self) -> None:
        s = self.settings
        self.service = ServiceTimes(
            ServiceTimeSettings(
                s.feasibility, s.service_time_prior, quantile=s.service_time_quantile
            )
        )

    def lease_until(self, deadline: float, *, now: float | None = None) -> float:
        """A claim lease: ``claim_lease`` from ``now`` (default: the clock's), at most
        :data:`LEASE_PAST_DEADLINE` past the deadline."""
        start = self.clock.now() if now is None else now
        return min(start + self.settings.claim_lease, deadline + LEASE_PAST_DEADLINE)

    def wall(self, seconds: float) -> float:
        return self.clock.to_wall(seconds)
