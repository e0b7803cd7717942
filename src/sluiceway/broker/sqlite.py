"""The ``sqlite`` broker: embedded, durable, one machine, the Redis broker's claim/ack semantics.

One database file holds the pending entries, claims, the retry set, result lists, request
markers and the invalid list. Every operation is one ``BEGIN IMMEDIATE`` transaction, so several
processes on one machine may share the file (WAL mode serialises writers): a claim has one
winner, an ack pushes its result and drops its claim atomically and is fenced by the owner
token, exactly as the Redis scripts do. Instants (``now``, leases, due times) come from the
caller; marker and result-list TTLs are wall seconds, as Redis key expiries are.

The stdlib ``sqlite3`` runs on one dedicated thread. Arrivals written by this process wake its
waiters at once; arrivals from other processes are seen at the caller's poll interval, and
blocking result pops look again every :data:`RESULT_POLL_SECONDS`.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

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
    retry_origin,
)
from sluiceway.broker.inspect import QueueCounts, count_retries
from sluiceway.broker.keys import Keyspace, invalid_info, member_digest
from sluiceway.broker.leases import LeaseHooks
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, PeekOrder
from sluiceway.broker.sqlite_db import SqliteRunner, open_database
from sluiceway.broker.wakeup import PollWaker
from sluiceway.config.urls import check_sqlite_path
from sluiceway.errors import ConfigError

__all__ = [
    "RESULT_POLL_SECONDS",
    "SqliteBroker",
    "database_path",
    "open_sqlite_broker",
    "sqlite_path",
]

T = TypeVar("T")
RESULT_POLL_SECONDS = 0.05

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
  queue TEXT NOT NULL, member TEXT NOT NULL, score REAL NOT NULL, PRIMARY KEY (queue, member));
CREATE INDEX IF NOT EXISTS pending_order ON pending (queue, score, member);
CREATE TABLE IF NOT EXISTS claims (
  queue TEXT NOT NULL, key TEXT NOT NULL, member TEXT NOT NULL, score REAL NOT NULL,
  owner TEXT NOT NULL, lease_until REAL NOT NULL, PRIMARY KEY (queue, key));
CREATE INDEX IF NOT EXISTS claims_lease ON claims (queue, lease_until);
CREATE TABLE IF NOT EXISTS retries (member TEXT PRIMARY KEY, due REAL NOT NULL);
CREATE INDEX IF NOT EXISTS retries_due ON retries (due, member);
CREATE TABLE IF NOT EXISTS results (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, destination TEXT NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS results_dest ON results (destination, seq);
CREATE TABLE IF NOT EXISTS result_expiry (destination TEXT PRIMARY KEY, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS markers (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at REAL);
CREATE TABLE IF NOT EXISTS invalid (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, member TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS invalid_info (
  queue TEXT NOT NULL, digest TEXT NOT NULL, info TEXT NOT NULL, PRIMARY KEY (queue, digest));
"""


def sqlite_path(url: str) -> str:
    """The file path of ``sqlite:///abs/path``, ``sqlite://rel/path`` or a plain path."""
    for prefix in ("sqlite:///", "sqlite://"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            return ("/" + rest) if prefix == "sqlite:///" else rest
    return url


class SqliteBroker:
    """A :class:`~sluiceway.broker.base.Broker` over one SQLite file."""

    def __init__(self, conn: sqlite3.Connection, *, keyspace: Keyspace | None = None) -> None:
        self.db = SqliteRunner(conn, name="sqlite-broker")
        self._keys = keyspace or Keyspace()
        self._waker = PollWaker()
        self._results = PollWaker()
        self._lease_hooks = LeaseHooks()

    def add_lease_hook(self, hook: Callable[[float], Awaitable[object]]) -> None:
        """Run ``hook(now)`` after reclaim rounds: other lease holders (quota) expire too."""
        self._lease_hooks.add(hook)

    async def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self.db.run(fn)

    # -- consumer side: entries -----------------------------------------------------------

    async def peek(
        self, queue: str, limit: int, *, offset: int = 0, order: PeekOrder = EARLIEST_DEADLINE
    ) -> list[Entry]:
        query = f"SELECT member, score FROM pending WHERE queue = ? ORDER BY {order.sql} LIMIT ?, ?"

        def peek(c: sqlite3.Connection) -> list[Entry]:
            return [Entry(queue, m, s) for m, s in c.execute(query, (queue, offset, limit))]

        return await self._tx(peek)

    async def claim(
        self, entry: Entry, *, key: str, owner: str, lease_until: float
    ) -> Claim | None:
        def claim(c: sqlite3.Connection) -> Claim | None:
            return _claim(c, entry, key=key, owner=owner, lease_until=lease_until)

        return await self._tx(claim)

    async def claim_many(self, asks: Sequence[ClaimAsk]) -> list[ClaimOutcome]:
        """One transaction for the whole batch (claims and cancel checks), not two per ask."""
        wall_now = time.time()

        def claim_many(c: sqlite3.Connection) -> list[ClaimOutcome]:
            out = []
            for a in asks:
                claim = _claim(c, a.entry, key=a.key, owner=a.owner, lease_until=a.lease_until)
                cancel = self._keys.request_cancel(a.request_id)
                cancelled = claim is not None and _marker(c, cancel, wall_now) == a.request_token
                out.append(ClaimOutcome(claim, cancelled))
            return out

        return await self._tx(claim_many)

    async def renew(self, claim: Claim, *, lease_until: float) -> RenewOutcome:
        def renew(c: sqlite3.Connection) -> RenewOutcome:
            owner = _one(
                c, "SELECT owner FROM claims WHERE queue=? AND key=?", claim.queue, claim.key
            )
            if owner is None:
                return RenewOutcome.MISSING
            if owner != claim.owner:
                return RenewOutcome.STOLEN
            c.execute(
                "UPDATE claims SET lease_until = ? WHERE queue = ? AND key = ?",
                (lease_until, claim.queue, claim.key),
            )
            return RenewOutcome.RENEWED

        return await self._tx(renew)

    async def ack(self, claim: Claim, result: ResultWrite) -> bool:
        def ack(c: sqlite3.Connection) -> bool:
            if not _drop_claim(c, claim):
                return False
            _push_result(c, result, wall_now=time.time())
            for key in (
                self._keys.request_active(result.request_id),
                self._keys.request_cancel(result.request_id),
            ):
                c.execute(
                    "DELETE FROM markers WHERE key = ? AND value = ?", (key, result.request_token)
                )
            return True

        done = await self._tx(ack)
        if done:
            self._results.notify(result.destination)
        return done

    async def release(self, claim: Claim) -> bool:
        def release(c: sqlite3.Connection) -> bool:
            if not _drop_claim(c, claim):
                return False
            _upsert_pending(c, claim.queue, claim.member, claim.score)
            return True

        done = await self._tx(release)
        if done:
            self._waker.notify(claim.queue)
        return done

    async def retry_after(self, claim: Claim, *, member: str, due: float) -> bool:
        def retry_after(c: sqlite3.Connection) -> bool:
            if not _drop_claim(c, claim):
                return False
            c.execute("INSERT OR REPLACE INTO retries VALUES (?, ?)", (member, due))
            return True

        return await self._tx(retry_after)

    async def move_due_retries(self, now: float, limit: int, *, fallback_queue: str) -> int:
        def move(c: sqlite3.Connection) -> list[str]:
            rows = c.execute(
                "SELECT member FROM retries WHERE due <= ? ORDER BY due, member LIMIT ?",
                (now, limit),
            ).fetchall()
            queues = []
            for (member,) in rows:
                queue, score = retry_origin(member) or (fallback_queue, now)
                c.execute("DELETE FROM retries WHERE member = ?", (member,))
                _upsert_pending(c, queue, member, score)
                queues.append(queue)
            return queues

        moved = await self._tx(move)
        for queue in set(moved):
            self._waker.notify(queue)
        return len(moved)

    async def next_retry_due(self) -> float | None:
        def head(c: sqlite3.Connection) -> float | None:
            due = _one(c, "SELECT MIN(due) FROM retries")
            return None if due is None else float(due)

        return await self._tx(head)

    async def reclaim_expired(self, queue: str, now: float, limit: int) -> int:
        def reclaim(c: sqlite3.Connection) -> int:
            rows = c.execute(
                "SELECT key, member, score FROM claims WHERE queue = ? AND lease_until < ? "
                "ORDER BY lease_until LIMIT ?",
                (queue, now, limit),
            ).fetchall()
            for key, member, score in rows:
                c.execute("DELETE FROM claims WHERE queue = ? AND key = ?", (queue, key))
                _upsert_pending(c, queue, member, score)
            return len(rows)

        count = await self._tx(reclaim)
        if count:
            self._waker.notify(queue)
        await self._lease_hooks.run(now)
        return count

    async def quarantine(self, entry: Entry, *, reason: str = "", now: float = 0.0) -> bool:
        def quarantine(c: sqlite3.Connection) -> bool:
            gone = c.execute(
                "DELETE FROM pending WHERE queue = ? AND member = ?", (entry.queue, entry.member)
            )
            if gone.rowcount == 0:
                return False
            c.execute(
                "INSERT INTO invalid (queue, member) VALUES (?, ?)", (entry.queue, entry.member)
            )
            c.execute(
                "INSERT OR REPLACE INTO invalid_info VALUES (?, ?, ?)",
                (entry.queue, member_digest(entry.member), invalid_info(reason, now)),
            )
            return True

        return await self._tx(quarantine)

    async def invalid_entries(self, queue: str) -> list[str]:
        """Members moved aside from ``queue`` (the ``<queue>:invalid`` list), oldest first."""

        def read(c: sqlite3.Connection) -> list[str]:
            rows = c.execute("SELECT member FROM invalid WHERE queue = ? ORDER BY seq", (queue,))
            return [m for (m,) in rows.fetchall()]

        return await self._tx(read)

    async def backlog(self, queue: str) -> int:
        def count(c: sqlite3.Connection) -> int:
            return int(_one(c, "SELECT COUNT(*) FROM pending WHERE queue = ?", queue) or 0)

        return await self._tx(count)

    async def count_due(self, queue: str, limits: Sequence[float]) -> list[int]:
        def count(c: sqlite3.Connection) -> list[int]:
            sql = "SELECT COUNT(*) FROM pending WHERE queue = ? AND score <= ?"
            return [int(_one(c, sql, queue, limit) or 0) for limit in limits]

        return await self._tx(count)

    async def is_cancelled(self, request_id: str, request_token: str) -> bool:
        key = self._keys.request_cancel(request_id)

        def read(c: sqlite3.Connection) -> bool:
            return _marker(c, key, time.time()) == request_token

        return await self._tx(read)

    async def wait_for_work(self, queues: Sequence[str], block_for: float) -> bool:
        return await self._waker.wait(queues, block_for)

    # -- producer side ---------------------------------------------------------------------

    async def enqueue(
        self,
        queue: str,
        entries: Sequence[tuple[str, float]],
        *,
        markers: Sequence[ActiveMarker] = (),
    ) -> int:
        wall_now = time.time()

        def enqueue(c: sqlite3.Connection) -> int:
            for m in markers:
                c.execute(
                    "DELETE FROM markers WHERE key = ?", (self._keys.request_cancel(m.request_id),)
                )
                expires = wall_now + m.expire_after if m.expire_after > 0 else None
                _set_marker(c, self._keys.request_active(m.request_id), m.request_token, expires)
            return sum(_upsert_pending(c, queue, member, score) for member, score in entries)

        added = await self._tx(enqueue)
        self._waker.notify(queue)
        return added

    async def cancel(self, request_id: str, *, expire_after: float) -> bool:
        wall_now = time.time()
        active = self._keys.request_active(request_id)
        cancel = self._keys.request_cancel(request_id)

        def mark(c: sqlite3.Connection) -> bool:
            token = _marker(c, active, wall_now)
            if token is None:
                return False
            _set_marker(c, cancel, token, wall_now + expire_after)
            return True

        return await self._tx(mark)

    async def pop_result(self, destination: str, block_for: float) -> str | None:
        loop = asyncio.get_running_loop()
        end = loop.time() + max(0.0, block_for)
        while True:
            record = await self._tx(lambda c: _pop_result(c, destination, time.time()))
            left = end - loop.time()
            if record is not None or left <= 0:
                return record
            await self._results.wait([destination], min(left, RESULT_POLL_SECONDS))

    async def result_count(self, destination: str) -> int:
        def count(c: sqlite3.Connection) -> int:
            _expire_results(c, destination, time.time())
            return int(
                _one(c, "SELECT COUNT(*) FROM results WHERE destination = ?", destination) or 0
            )

        return await self._tx(count)

    async def peek_result(self, destination: str) -> str | None:
        def peek(c: sqlite3.Connection) -> str | None:
            _expire_results(c, destination, time.time())
            sql = "SELECT record FROM results WHERE destination = ? ORDER BY seq LIMIT 1"
            record = _one(c, sql, destination)
            return None if record is None else str(record)

        return await self._tx(peek)

    async def wait_for_result(self, destination: str, block_for: float) -> bool:
        # Pushes from this process wake at once; other processes' are seen at the caller's
        # poll interval (SQLite has no notifications).
        return await self._results.wait_unless(
            destination, lambda: self._has_result(destination), block_for
        )

    async def _has_result(self, destination: str) -> bool:
        return await self.peek_result(destination) is not None

    async def expire_result(self, destination: str, after: float) -> None:
        wall_now = time.time()

        def expire(c: sqlite3.Connection) -> None:
            if after <= 0:
                c.execute("DELETE FROM results WHERE destination = ?", (destination,))
                c.execute("DELETE FROM result_expiry WHERE destination = ?", (destination,))
            elif _one(c, "SELECT 1 FROM results WHERE destination = ?", destination):
                c.execute(
                    "INSERT OR REPLACE INTO result_expiry VALUES (?, ?)",
                    (destination, wall_now + after),
                )

        await self._tx(expire)

    async def is_pending(self, request_id: str) -> bool:
        active = self._keys.request_active(request_id)
        return await self._tx(lambda c: _marker(c, active, time.time()) is not None)

    async def revive(self, request_id: str) -> bool:
        wall_now = time.time()
        active = self._keys.request_active(request_id)
        cancel = self._keys.request_cancel(request_id)

        def revive(c: sqlite3.Connection) -> bool:
            token = _marker(c, active, wall_now)
            if token is None or _marker(c, cancel, wall_now) != token:
                return False
            c.execute("DELETE FROM markers WHERE key = ?", (cancel,))
            return True

        return await self._tx(revive)

    async def invalid_reasons(self, queue: str) -> dict[str, str]:
        """The ``<queue>:invalid:info`` hash: member digest -> JSON reason and time."""

        def read(c: sqlite3.Connection) -> dict[str, str]:
            rows = c.execute("SELECT digest, info FROM invalid_info WHERE queue = ?", (queue,))
            return dict(rows.fetchall())

        return await self._tx(read)

    # -- inspection (broker.inspect.Inspectable) ---------------------------------------------

    async def queue_counts(self, queues: Sequence[str]) -> list[QueueCounts]:
        def counts(c: sqlite3.Connection) -> list[QueueCounts]:
            retries = count_retries(m for (m,) in c.execute("SELECT member FROM retries"))
            return [
                QueueCounts(
                    queue=q,
                    pending=int(_one(c, "SELECT COUNT(*) FROM pending WHERE queue = ?", q)),
                    claimed=int(_one(c, "SELECT COUNT(*) FROM claims WHERE queue = ?", q)),
                    retrying=retries[q],
                    invalid=int(_one(c, "SELECT COUNT(*) FROM invalid WHERE queue = ?", q)),
                    oldest_deadline=_one(c, "SELECT MIN(score) FROM pending WHERE queue = ?", q),
                )
                for q in queues
            ]

        return await self._tx(counts)

    async def peek_results(self, destination: str, limit: int) -> list[str]:
        def peek(c: sqlite3.Connection) -> list[str]:
            _expire_results(c, destination, time.time())
            rows = c.execute(
                "SELECT record FROM results WHERE destination = ? ORDER BY seq LIMIT ?",
                (destination, max(0, limit)),
            )
            return [r for (r,) in rows.fetchall()]

        return await self._tx(peek)

    async def remove_result(self, destination: str, record: str) -> bool:
        def remove(c: sqlite3.Connection) -> bool:
            row = c.execute(
                "SELECT seq FROM results WHERE destination = ? AND record = ? ORDER BY seq LIMIT 1",
                (destination, record),
            ).fetchone()
            if row is not None:
                c.execute("DELETE FROM results WHERE seq = ?", row)
            return row is not None

        return await self._tx(remove)

    async def ping(self) -> None:
        await self._tx(lambda c: _one(c, "SELECT 1"))

    async def aclose(self) -> None:
        await self.db.aclose()


# -- statements shared by several operations (run inside a transaction) ---------------------


def _one(c: sqlite3.Connection, sql: str, *args: Any) -> Any:
    row = c.execute(sql, args).fetchone()
    return None if row is None else row[0]


def _claim(
    c: sqlite3.Connection, entry: Entry, *, key: str, owner: str, lease_until: float
) -> Claim | None:
    """Move ``entry`` from pending to claimed unless its generation is already claimed."""
    if _one(c, "SELECT 1 FROM claims WHERE queue = ? AND key = ?", entry.queue, key):
        return None
    gone = c.execute(
        "DELETE FROM pending WHERE queue = ? AND member = ?", (entry.queue, entry.member)
    )
    if gone.rowcount == 0:
        return None
    c.execute(
        "INSERT INTO claims VALUES (?, ?, ?, ?, ?, ?)",
        (entry.queue, key, entry.member, entry.score, owner, lease_until),
    )
    return Claim(entry.queue, key, entry.member, entry.score, owner, lease_until)


def _drop_claim(c: sqlite3.Connection, claim: Claim) -> bool:
    """Delete the claim if ``claim.owner`` still owns it (the fence)."""
    gone = c.execute(
        "DELETE FROM claims WHERE queue = ? AND key = ? AND owner = ?",
        (claim.queue, claim.key, claim.owner),
    )
    return gone.rowcount == 1


def _upsert_pending(c: sqlite3.Connection, queue: str, member: str, score: float) -> int:
    """ZADD semantics: insert, or move an existing member to ``score``; 1 when new."""
    cur = c.execute(
        "UPDATE pending SET score = ? WHERE queue = ? AND member = ?", (score, queue, member)
    )
    if cur.rowcount:
        return 0
    c.execute("INSERT INTO pending VALUES (?, ?, ?)", (queue, member, score))
    return 1


def _push_result(c: sqlite3.Connection, result: ResultWrite, *, wall_now: float) -> None:
    _expire_results(c, result.destination, wall_now)
    c.execute(
        "INSERT INTO results (destination, record) VALUES (?, ?)",
        (result.destination, result.record),
    )
    if result.expire_after and result.expire_after > 0:
        c.execute(
            "INSERT OR REPLACE INTO result_expiry VALUES (?, ?)",
            (result.destination, wall_now + result.expire_after),
        )


def _expire_results(c: sqlite3.Connection, destination: str, wall_now: float) -> None:
    """A result list whose TTL passed is gone as a whole, as with Redis EXPIRE."""
    expires = _one(c, "SELECT expires_at FROM result_expiry WHERE destination = ?", destination)
    if expires is not None and expires <= wall_now:
        c.execute("DELETE FROM results WHERE destination = ?", (destination,))
        c.execute("DELETE FROM result_expiry WHERE destination = ?", (destination,))


def _pop_result(c: sqlite3.Connection, destination: str, wall_now: float) -> str | None:
    _expire_results(c, destination, wall_now)
    row = c.execute(
        "SELECT seq, record FROM results WHERE destination = ? ORDER BY seq LIMIT 1",
        (destination,),
    ).fetchone()
    if row is None:
        return None
    c.execute("DELETE FROM results WHERE seq = ?", (row[0],))
    return str(row[1])


def _marker(c: sqlite3.Connection, key: str, wall_now: float) -> str | None:
    row = c.execute("SELECT value, expires_at FROM markers WHERE key = ?", (key,)).fetchone()
    if row is None or (row[1] is not None and row[1] <= wall_now):
        return None
    return str(row[0])


def _set_marker(c: sqlite3.Connection, key: str, value: str, expires_at: float | None) -> None:
    c.execute("INSERT OR REPLACE INTO markers VALUES (?, ?, ?)", (key, value, expires_at))


def database_path(options: BrokerOptions) -> str:
    """The database file named by the transport options (``url`` or ``path``)."""
    raw = options.url or str(options.settings.get("path") or options.settings.get("url") or "")
    if not raw:
        raise ConfigError("the sqlite transport needs a database path (url or path)", field="url")
    return sqlite_path(check_sqlite_path(raw, field="path"))


async def open_sqlite_broker(options: BrokerOptions) -> Broker:
    """Open (creating if needed) the SQLite database named by ``options``."""
    return SqliteBroker(await open_database(database_path(options), _SCHEMA))
