"""The ``memory`` broker: everything in one process, exact, nothing survives a restart.

Mirrors the Redis layout (pending sorted sets, claims with owner tokens and leases, a retry set,
result lists, markers) so that it passes the same conformance suite. Ties in score are broken by
the member string, as Redis does. Arrivals wake waiters at once (no polling).
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from sluiceway.broker.base import (
    ActiveMarker,
    Broker,
    BrokerOptions,
    Claim,
    ClaimAsk,
    ClaimOutcome,
    Entry,
    RenewOutcome,
    ResultWrite,
    claim_each,
    retry_origin,
)
from sluiceway.broker.inspect import QueueCounts, count_retries
from sluiceway.broker.keys import invalid_info, member_digest
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, PeekOrder
from sluiceway.broker.wakeup import PollWaker, WakeMode

__all__ = ["MemoryBroker", "open_memory_broker"]


class _SortedSet:
    """Members ordered by (score, member), like a Redis ZSET."""

    def __init__(self) -> None:
        self._order: list[tuple[float, str]] = []
        self._scores: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, member: str) -> bool:
        return member in self._scores

    def add(self, member: str, score: float) -> bool:
        added = self.remove(member) is None
        self._scores[member] = score
        bisect.insort(self._order, (score, member))
        return added

    def remove(self, member: str) -> float | None:
        score = self._scores.pop(member, None)
        if score is not None:
            index = bisect.bisect_left(self._order, (score, member))
            del self._order[index]
        return score

    def range(self, offset: int, limit: int, *, reverse: bool = False) -> list[tuple[float, str]]:
        if not reverse:
            return self._order[offset : offset + limit]
        end = max(0, len(self._order) - offset)
        return self._order[max(0, end - limit) : end][::-1]

    def upto(self, max_score: float, limit: int) -> list[tuple[float, str]]:
        end = bisect.bisect_right(self._order, (max_score, "\U0010ffff"))
        return self._order[: min(end, limit)]

    def count_upto(self, max_score: float) -> int:
        return bisect.bisect_right(self._order, (max_score, "\U0010ffff"))

    def first_score(self) -> float | None:
        return self._order[0][0] if self._order else None


@dataclass(slots=True)
class _Held:
    member: str
    score: float
    owner: str
    lease_until: float


class MemoryBroker:
    """In-process :class:`~sluiceway.broker.base.Broker`."""

    # Every push happens in this process, so result waiters are always woken at once.
    result_wake_mode = WakeMode.EVENTS

    def __init__(self) -> None:
        self._pending: dict[str, _SortedSet] = {}
        self._claims: dict[str, dict[str, _Held]] = {}
        self._retries = _SortedSet()
        self._results: dict[str, deque[str]] = {}
        self._result_expiry: dict[str, float] = {}  # destination -> monotonic wall deadline
        self._invalid: dict[str, list[str]] = {}
        self._invalid_info: dict[str, dict[str, str]] = {}
        self._active: dict[str, str] = {}
        self._cancelled: dict[str, str] = {}
        self._work = PollWaker()
        self._results_ready = PollWaker()

    # -- inspection helpers (tests, demo) ----------------------------------------------------

    def invalid_entries(self, queue: str) -> list[str]:
        """Members moved to ``<queue>:invalid``, oldest first."""
        return list(self._invalid.get(queue, []))

    def claimed_count(self, queue: str) -> int:
        """How many claims of ``queue`` are outstanding."""
        return len(self._claims.get(queue, {}))

    def retry_count(self) -> int:
        """How many members wait in the retry set."""
        return len(self._retries)

    def waiting(self) -> int:
        """How many ``wait_for_work`` / ``pop_result`` calls are blocked right now."""
        return self._work.waiting() + self._results_ready.waiting()

    def _add_pending(self, queue: str, member: str, score: float) -> None:
        self._pending.setdefault(queue, _SortedSet()).add(member, score)
        self._work.notify(queue)

    def _owned(self, claim: Claim) -> _Held | None:
        held = self._claims.get(claim.queue, {}).get(claim.key)
        if held is None or held.owner != claim.owner:
            return None
        return held

    def _drop_claim(self, claim: Claim) -> None:
        self._claims.get(claim.queue, {}).pop(claim.key, None)

    # -- consumer side ---------------------------------------------------------------------

    async def peek(
        self, queue: str, limit: int, *, offset: int = 0, order: PeekOrder = EARLIEST_DEADLINE
    ) -> list[Entry]:
        pending = self._pending.get(queue)
        if pending is None or limit <= 0:
            return []
        rows = pending.range(offset, limit, reverse=order.reverse)
        return [Entry(queue, member, score) for score, member in rows]

    async def claim(
        self, entry: Entry, *, key: str, owner: str, lease_until: float
    ) -> Claim | None:
        claims = self._claims.setdefault(entry.queue, {})
        if key in claims:  # this generation is already claimed: the entry stays pending
            return None
        pending = self._pending.get(entry.queue)
        if pending is None or pending.remove(entry.member) is None:
            return None
        claims[key] = _Held(entry.member, entry.score, owner, lease_until)
        return Claim(entry.queue, key, entry.member, entry.score, owner, lease_until)

    async def claim_many(self, asks: Sequence[ClaimAsk]) -> list[ClaimOutcome]:
        return await claim_each(self, asks)

    async def renew(self, claim: Claim, *, lease_until: float) -> RenewOutcome:
        held = self._claims.get(claim.queue, {}).get(claim.key)
        if held is None:
            return RenewOutcome.MISSING
        if held.owner != claim.owner:
            return RenewOutcome.STOLEN
        held.lease_until = lease_until
        return RenewOutcome.RENEWED

    async def ack(self, claim: Claim, result: ResultWrite) -> bool:
        if self._owned(claim) is None:
            return False
        self._drop_claim(claim)
        self._expire_due(result.destination)
        self._results.setdefault(result.destination, deque()).appendleft(result.record)
        if result.expire_after is not None and result.expire_after > 0:
            self._result_expiry[result.destination] = time.monotonic() + result.expire_after
        for markers in (self._active, self._cancelled):
            if markers.get(result.request_id) == result.request_token:
                del markers[result.request_id]
        self._results_ready.notify(result.destination)
        return True

    async def release(self, claim: Claim) -> bool:
        held = self._owned(claim)
        if held is None:
            return False
        self._drop_claim(claim)
        self._add_pending(claim.queue, held.member, held.score)
        return True

    async def retry_after(self, claim: Claim, *, member: str, due: float) -> bool:
        if self._owned(claim) is None:
            return False
        self._drop_claim(claim)
        self._retries.add(member, due)
        return True

    async def move_due_retries(self, now: float, limit: int, *, fallback_queue: str) -> int:
        due = self._retries.upto(now, limit)
        for _, member in due:
            self._retries.remove(member)
            queue, score = retry_origin(member) or (fallback_queue, now)
            self._add_pending(queue, member, score)
        return len(due)

    async def next_retry_due(self) -> float | None:
        return self._retries.first_score()

    async def reclaim_expired(self, queue: str, now: float, limit: int) -> int:
        claims = self._claims.get(queue, {})
        expired = sorted(
            (held.lease_until, key) for key, held in claims.items() if held.lease_until < now
        )[:limit]
        for _, key in expired:
            held = claims.pop(key)
            self._add_pending(queue, held.member, held.score)
        return len(expired)

    async def quarantine(self, entry: Entry, *, reason: str = "", now: float = 0.0) -> bool:
        pending = self._pending.get(entry.queue)
        if pending is None or pending.remove(entry.member) is None:
            return False
        self._invalid.setdefault(entry.queue, []).insert(0, entry.member)
        info = self._invalid_info.setdefault(entry.queue, {})
        info[member_digest(entry.member)] = invalid_info(reason, now)
        return True

    def invalid_reasons(self, queue: str) -> dict[str, str]:
        """The ``<queue>:invalid:info`` hash: member digest -> JSON reason and time."""
        return dict(self._invalid_info.get(queue, {}))

    async def backlog(self, queue: str) -> int:
        pending = self._pending.get(queue)
        return 0 if pending is None else len(pending)

    async def count_due(self, queue: str, limits: Sequence[float]) -> list[int]:
        pending = self._pending.get(queue) or _SortedSet()
        return [pending.count_upto(limit) for limit in limits]

    async def is_cancelled(self, request_id: str, request_token: str) -> bool:
        return self._cancelled.get(request_id) == request_token

    async def wait_for_work(self, queues: Sequence[str], block_for: float) -> bool:
        return await self._work.wait(queues, max(0.0, block_for))

    # -- producer side ---------------------------------------------------------------------

    async def enqueue(
        self,
        queue: str,
        entries: Sequence[tuple[str, float]],
        *,
        markers: Sequence[ActiveMarker] = (),
    ) -> int:
        for marker in markers:
            self._cancelled.pop(marker.request_id, None)
            self._active[marker.request_id] = marker.request_token
        pending = self._pending.setdefault(queue, _SortedSet())
        added = sum(pending.add(member, score) for member, score in entries)
        if entries:
            self._work.notify(queue)
        return added

    async def cancel(self, request_id: str, *, expire_after: float) -> bool:
        token = self._active.get(request_id)
        if token is None:
            return False
        self._cancelled[request_id] = token
        return True

    async def pop_result(self, destination: str, block_for: float) -> str | None:
        loop = asyncio.get_running_loop()
        end = loop.time() + max(0.0, block_for)
        while True:
            self._expire_due(destination)
            results = self._results.get(destination)
            if results:
                return results.pop()
            left = end - loop.time()
            if left <= 0:
                return None
            await self._results_ready.wait([destination], left)

    async def result_count(self, destination: str) -> int:
        return len(self._live_results(destination))

    def _expire_due(self, destination: str) -> None:
        """Drop a result list whose expiry passed, as a whole (Redis EXPIRE semantics)."""
        expires = self._result_expiry.get(destination)
        if expires is not None and expires <= time.monotonic():
            del self._result_expiry[destination]
            self._results.pop(destination, None)

    def _live_results(self, destination: str) -> Sequence[str]:
        self._expire_due(destination)
        return self._results.get(destination, ())

    async def peek_result(self, destination: str) -> str | None:
        results = self._live_results(destination)
        return results[-1] if results else None

    async def wait_for_result(self, destination: str, block_for: float) -> bool:
        if self._live_results(destination):
            return True
        return await self._results_ready.wait([destination], max(0.0, block_for))

    async def expire_result(self, destination: str, after: float) -> None:
        if after <= 0:
            self._results.pop(destination, None)
            self._result_expiry.pop(destination, None)
        elif destination in self._results:
            self._result_expiry[destination] = time.monotonic() + after

    async def is_pending(self, request_id: str) -> bool:
        return request_id in self._active

    async def revive(self, request_id: str) -> bool:
        token = self._active.get(request_id)
        if token is None or self._cancelled.get(request_id) != token:
            return False
        del self._cancelled[request_id]
        return True

    # -- inspection (broker.inspect.Inspectable) ---------------------------------------------

    async def queue_counts(self, queues: Sequence[str]) -> list[QueueCounts]:
        retries = count_retries(member for _, member in self._retries.range(0, len(self._retries)))
        out = []
        for queue in queues:
            pending = self._pending.get(queue)
            out.append(
                QueueCounts(
                    queue=queue,
                    pending=0 if pending is None else len(pending),
                    claimed=len(self._claims.get(queue, {})),
                    retrying=retries[queue],
                    invalid=len(self._invalid.get(queue, [])),
                    oldest_deadline=None if pending is None else pending.first_score(),
                )
            )
        return out

    async def peek_results(self, destination: str, limit: int) -> list[str]:
        results = self._results.get(destination, deque())
        return list(reversed(results))[: max(0, limit)]

    async def remove_result(self, destination: str, record: str) -> bool:
        results = self._results.get(destination)
        if not results or record not in results:
            return False
        # The deque holds newest first: drop the last (oldest) copy.
        index = len(results) - 1 - list(reversed(results)).index(record)
        del results[index]
        return True

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def open_memory_broker(options: BrokerOptions) -> Broker:
    """Factory registered as transport ``memory``."""
    return MemoryBroker()
