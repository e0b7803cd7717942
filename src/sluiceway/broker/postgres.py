"""The ``postgres`` broker: any number of processors on one PostgreSQL database.

Pending entries, claims, the retry set, result lists, request markers and the invalid list are
tables of the ``sluiceway`` schema (:mod:`sluiceway.broker.postgres_schema`). Each operation is
one PL/pgSQL function call, so one round trip and one transaction:

- a claim deletes the pending row it locked with ``FOR UPDATE SKIP LOCKED`` and inserts the claim
  row; concurrent claimers skip each other's rows instead of waiting, and one generation has at
  most one claim (the claims' primary key);
- an ack deletes the claim only if the owner token still matches (the fence) and inserts the
  result row in the same transaction: exactly one result per request;
- release, retry and reclaim are fenced the same way and put the entry back at its score.

Wake-ups: the broker LISTENs on one connection; commits that make work pending NOTIFY it. While
that connection is up, a queue that answered empty stays known-empty until a notification for
it arrives (re-checked every :data:`IDLE_RECHECK_SECONDS` as a backstop), and so does the retry
set, so an idle processor sends no statements but its heartbeat (reclaim rounds and backlog
gauges). When the connection is down, every peek goes to the database again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    split_claim_key,
)
from sluiceway.broker.cancel_cache import CancelCache
from sluiceway.broker.inspect import QueueCounts, count_retries
from sluiceway.broker.keys import invalid_info, member_digest
from sluiceway.broker.leases import LeaseHooks
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, PeekOrder
from sluiceway.broker.postgres_batch import AckBatcher
from sluiceway.broker.postgres_db import PostgresDatabase, dsn_from
from sluiceway.broker.postgres_schema import (
    CANCEL_CHANNEL,
    RESULT_CHANNEL,
    RETRY_CHANNEL,
    SQL,
    WORK_CHANNEL,
)
from sluiceway.broker.wakeup import PollWaker, WakeMode
from sluiceway.errors import ConfigError

__all__ = [
    "DEFAULT_POOL_SIZE",
    "IDLE_RECHECK_SECONDS",
    "PostgresBroker",
    "open_postgres_broker",
    "pool_size",
    "postgres_dsn",
]

IDLE_RECHECK_SECONDS = 30.0
DEFAULT_POOL_SIZE = 10
_RESULT_POLL_SECONDS = 0.25  # without notifications
_RESULT_WAIT_CAP_SECONDS = 5.0  # with notifications (a backstop against a lost one)


@dataclass
class _Known:
    """An answer that stays true until a notification bumps ``generation``."""

    generation: int
    at: float
    value: Any = None


class _IdleCache:
    """Known-empty queues and the known retry head, valid while notifications flow."""

    def __init__(self, live: Callable[[], bool]) -> None:
        self._live = live
        self.generation: dict[str, int] = {}
        self._known: dict[str, _Known] = {}

    def bump(self, name: str) -> None:
        self.generation[name] = self.generation.get(name, 0) + 1
        self._known.pop(name, None)

    def clear(self) -> None:
        self._known.clear()

    def mark(self, name: str, generation: int, value: Any = None) -> None:
        if self.generation.get(name, 0) == generation:
            loop_time = asyncio.get_running_loop().time()
            self._known[name] = _Known(generation, loop_time, value)

    def get(self, name: str) -> _Known | None:
        known = self._known.get(name)
        if known is None or not self._live():
            return None
        fresh = asyncio.get_running_loop().time() - known.at < IDLE_RECHECK_SECONDS
        if known.generation != self.generation.get(name, 0) or not fresh:
            return None
        return known


_RETRIES = "\x00retries"  # the idle cache's name for the retry set (no queue has it)


class PostgresBroker:
    """A :class:`~sluiceway.broker.base.Broker` over one PostgreSQL database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        self._waker = PollWaker()
        self._results = PollWaker()
        self._idle = _IdleCache(lambda: db.listening)
        self._lease_hooks = LeaseHooks()
        self._seen: set[str] = set()
        self._cancels = CancelCache()
        self._acks = AckBatcher(db)

    async def start_listening(self) -> None:
        """Subscribe to the wake-up channels (called once by the opener)."""
        await self.db.listen(WORK_CHANNEL, self._on_work)
        await self.db.listen(RESULT_CHANNEL, self._results.notify)
        await self.db.listen(RETRY_CHANNEL, lambda _payload: self._idle.bump(_RETRIES))
        await self.db.listen(CANCEL_CHANNEL, self._cancels.invalidate)
        self._cancels.set_live(True)
        self.db.on_lost(lambda: self._cancels.set_live(False))
        self.db.on_reconnect(self._after_reconnect)

    def _on_work(self, queue: str) -> None:
        self._idle.bump(queue)
        self._waker.notify(queue)

    def _after_reconnect(self) -> None:
        """Notifications may have been missed: forget what was known and wake every waiter."""
        self._idle.clear()
        self._cancels.set_live(True)
        for queue in self._seen:
            self._waker.notify(queue)

    def add_lease_hook(self, hook: Callable[[float], Any]) -> None:
        """Run ``hook(now)`` after reclaim rounds (the quota store's reaper)."""
        self._lease_hooks.add(hook)

    @property
    def round_trips(self) -> int:
        """Statements sent so far (benchmarks divide it by requests)."""
        return self.db.round_trips

    # -- consumer side: entries -----------------------------------------------------------

    async def peek(
        self, queue: str, limit: int, *, offset: int = 0, order: PeekOrder = EARLIEST_DEADLINE
    ) -> list[Entry]:
        self._seen.add(queue)
        if offset == 0 and self._idle.get(queue) is not None:
            return []
        generation = self._idle.generation.get(queue, 0)
        rows = await self.db.fetch(SQL.PEEK.format(order=order.sql), queue, limit, offset)
        if not rows and offset == 0:
            self._idle.mark(queue, generation)
        return [Entry(queue, r[0], float(r[1])) for r in rows]

    async def claim(
        self, entry: Entry, *, key: str, owner: str, lease_until: float
    ) -> Claim | None:
        request_id, token = split_claim_key(key)
        (outcome,) = await self.claim_many([ClaimAsk(entry, request_id, token, owner, lease_until)])
        return outcome.claim

    async def claim_many(self, asks: Sequence[ClaimAsk]) -> list[ClaimOutcome]:
        """One statement for the whole batch: the claims and their cancellation checks."""
        if not asks:
            return []
        since = self._cancels.mark()
        rows = await self.db.fetch(
            SQL.CLAIM_MANY,
            [a.entry.queue for a in asks],
            [a.entry.member for a in asks],
            [a.key.encode() for a in asks],
            [a.owner for a in asks],
            [a.lease_until for a in asks],
            [a.request_id for a in asks],
            [a.request_token for a in asks],
        )
        outcomes = [
            _outcome(a, bool(won), bool(cancelled))
            for a, (won, cancelled) in zip(asks, rows, strict=True)
        ]
        for ask, outcome in zip(asks, outcomes, strict=True):
            if outcome.claim is not None and not outcome.cancelled:
                self._cancels.remember_clear(ask.request_id, ask.request_token, since=since)
        return outcomes

    async def renew(self, claim: Claim, *, lease_until: float) -> RenewOutcome:
        found = await self.db.fetchval(
            SQL.RENEW, claim.queue, claim.key.encode(), claim.owner, lease_until
        )
        return RenewOutcome(found)

    async def ack(self, claim: Claim, result: ResultWrite) -> bool:
        """Fenced ack and result write in one transaction; the acks of one loop turn share a
        statement (:mod:`sluiceway.broker.postgres_batch`)."""
        self._cancels.forget(result.request_id)
        return await self._acks.ack(claim, result)

    async def release(self, claim: Claim) -> bool:
        done = bool(
            await self.db.fetchval(SQL.RELEASE, claim.queue, claim.key.encode(), claim.owner)
        )
        if done:
            self._on_work(claim.queue)
        return done

    async def retry_after(self, claim: Claim, *, member: str, due: float) -> bool:
        done = bool(
            await self.db.fetchval(
                SQL.RETRY_AFTER, claim.queue, claim.key.encode(), claim.owner, member, due
            )
        )
        if done:
            self._idle.bump(_RETRIES)
        return done

    async def move_due_retries(self, now: float, limit: int, *, fallback_queue: str) -> int:
        known = self._idle.get(_RETRIES)
        if known is not None and (known.value is None or now < known.value):
            return 0
        moved = int(await self.db.fetchval(SQL.MOVE_DUE_RETRIES, now, limit, fallback_queue))
        if moved:
            self._idle.bump(_RETRIES)
        return moved

    async def next_retry_due(self) -> float | None:
        known = self._idle.get(_RETRIES)
        if known is not None:
            return known.value  # type: ignore[no-any-return]
        generation = self._idle.generation.get(_RETRIES, 0)
        due = await self.db.fetchval(SQL.NEXT_RETRY_DUE)
        value = None if due is None else float(due)
        self._idle.mark(_RETRIES, generation, value)
        return value

    async def reclaim_expired(self, queue: str, now: float, limit: int) -> int:
        count = int(await self.db.fetchval(SQL.RECLAIM_EXPIRED, queue, now, limit))
        if count:
            self._on_work(queue)
        await self._lease_hooks.run(now)
        return count

    async def quarantine(self, entry: Entry, *, reason: str = "", now: float = 0.0) -> bool:
        if not await self.db.fetchval(SQL.QUARANTINE, entry.queue, entry.member):
            return False
        info = invalid_info(reason, now)
        await self.db.fetchval(SQL.INVALID_INFO, entry.queue, member_digest(entry.member), info)
        return True

    async def invalid_reasons(self, queue: str) -> dict[str, str]:
        """Why each member of ``<queue>:invalid`` was moved aside: digest -> JSON reason."""
        return {r[0]: r[1] for r in await self.db.fetch(SQL.INVALID_REASONS, queue)}

    async def invalid_entries(self, queue: str) -> list[str]:
        """Members moved aside from ``queue`` (the ``<queue>:invalid`` list), oldest first."""
        return [r[0] for r in await self.db.fetch(SQL.INVALID, queue)]

    async def backlog(self, queue: str) -> int:
        if self._idle.get(queue) is not None:
            return 0
        return int(await self.db.fetchval(SQL.BACKLOG, queue))

    async def count_due(self, queue: str, limits: Sequence[float]) -> list[int]:
        if not limits:
            return []
        if self._idle.get(queue) is not None:
            return [0 for _ in limits]
        return [int(r[0]) for r in await self.db.fetch(SQL.COUNT_DUE, queue, list(limits))]

    async def is_cancelled(self, request_id: str, request_token: str) -> bool:
        """Answered locally for a generation known clear while NOTIFY flows (never a false
        "cancelled"; a local "not cancelled" lags a cancel by the notification's delivery)."""
        if self._cancels.known_clear(request_id, request_token):
            return False
        since = self._cancels.mark()
        cancelled = bool(await self.db.fetchval(SQL.IS_CANCELLED, request_id, request_token))
        if not cancelled:
            self._cancels.remember_clear(request_id, request_token, since=since)
        return cancelled

    async def wait_for_work(self, queues: Sequence[str], block_for: float) -> bool:
        self._seen.update(queues)
        return await self._waker.wait(queues, block_for)

    # -- producer side ---------------------------------------------------------------------

    async def enqueue(
        self,
        queue: str,
        entries: Sequence[tuple[str, float]],
        *,
        markers: Sequence[ActiveMarker] = (),
    ) -> int:
        added = int(
            await self.db.fetchval(
                SQL.ENQUEUE, queue, [m for m, _ in entries], [float(s) for _, s in entries],
                [m.request_id for m in markers], [m.request_token for m in markers],
                [float(m.expire_after) for m in markers],
            )
        )  # fmt: skip
        self._on_work(queue)
        return added

    async def cancel(self, request_id: str, *, expire_after: float) -> bool:
        return bool(await self.db.fetchval(SQL.CANCEL, request_id, float(expire_after)))

    async def pop_result(self, destination: str, block_for: float) -> str | None:
        loop = asyncio.get_running_loop()
        end = loop.time() + max(0.0, block_for)
        while True:
            record = await self.db.fetchval(SQL.POP_RESULT, destination)
            left = end - loop.time()
            if record is not None or left <= 0:
                return None if record is None else str(record)
            step = _RESULT_WAIT_CAP_SECONDS if self.db.listening else _RESULT_POLL_SECONDS
            await self._results.wait([destination], min(left, step))

    async def result_count(self, destination: str) -> int:
        return int(await self.db.fetchval(SQL.RESULT_COUNT, destination))

    # -- inspection (broker.inspect.Inspectable) ---------------------------------------------

    async def queue_counts(self, queues: Sequence[str]) -> list[QueueCounts]:
        retries = count_retries(r[0] for r in await self.db.fetch(SQL.RETRY_MEMBERS))
        out = []
        for queue in queues:
            (row,) = await self.db.fetch(SQL.QUEUE_COUNTS, queue)
            pending, claimed, invalid, oldest = row
            out.append(
                QueueCounts(queue, int(pending), int(claimed), retries[queue], int(invalid), oldest)
            )
        return out

    async def peek_results(self, destination: str, limit: int) -> list[str]:
        await self.db.fetchval(SQL.EXPIRE_RESULTS, destination)
        rows = await self.db.fetch(SQL.PEEK_RESULTS, destination, max(0, limit))
        return [str(r[0]) for r in rows]

    async def remove_result(self, destination: str, record: str) -> bool:
        return await self.db.fetchval(SQL.REMOVE_RESULT, destination, record) is not None

    # -- result mailboxes -------------------------------------------------------------------

    @property
    def result_wake_mode(self) -> WakeMode:
        """EVENTS while the LISTEN connection is up (an ack NOTIFYs its destination)."""
        return WakeMode.EVENTS if self.db.listening else WakeMode.POLLING

    async def peek_result(self, destination: str) -> str | None:
        record = await self.db.fetchval(SQL.PEEK_RESULT, destination)
        return None if record is None else str(record)

    async def wait_for_result(self, destination: str, block_for: float) -> bool:
        step = block_for if self.db.listening else min(block_for, _RESULT_POLL_SECONDS)
        return await self._results.wait_unless(
            destination, lambda: self._has_result(destination), step
        )

    async def _has_result(self, destination: str) -> bool:
        return await self.peek_result(destination) is not None

    async def expire_result(self, destination: str, after: float) -> None:
        await self.db.fetchval(SQL.EXPIRE_RESULT, destination, float(after))

    async def is_pending(self, request_id: str) -> bool:
        return bool(await self.db.fetchval(SQL.IS_PENDING, request_id))

    async def revive(self, request_id: str) -> bool:
        return bool(await self.db.fetchval(SQL.REVIVE, request_id))

    async def ping(self) -> None:
        await self.db.fetchval(SQL.PING)

    async def aclose(self) -> None:
        await self._acks.aclose()
        await self.db.aclose()


def _outcome(ask: ClaimAsk, won: bool, cancelled: bool) -> ClaimOutcome:
    if not won:
        return ClaimOutcome(None)
    entry = ask.entry
    claim = Claim(entry.queue, ask.key, entry.member, entry.score, ask.owner, ask.lease_until)
    return ClaimOutcome(claim, cancelled)


def postgres_dsn(options: BrokerOptions, env: Mapping[str, str] | None = None) -> str:
    """The DSN of the transport options: ``url``, else ``DATABASE_URL`` / ``SQL_URL``."""
    url = options.url or str(options.settings.get("url") or "") or None
    return dsn_from(url, dict(env) if env is not None else None)


def pool_size(options: BrokerOptions) -> int:
    """Pooled connections per broker: the ``pool_size`` transport key (default 10)."""
    size = options.settings.get("pool_size", DEFAULT_POOL_SIZE)
    if not isinstance(size, int) or size < 1:
        raise ConfigError("must be a positive integer", field="pool_size")
    return size


async def open_postgres_broker(options: BrokerOptions) -> Broker:
    """Connect, create or migrate the schema, and start listening for wake-ups."""
    db = PostgresDatabase(postgres_dsn(options), max_size=pool_size(options))
    await db.open()
    broker = PostgresBroker(db)
    try:
        await broker.start_listening()
    except BaseException:
        await db.aclose()
        raise
    return broker
