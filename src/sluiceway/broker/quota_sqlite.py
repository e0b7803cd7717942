"""The SQLite quota store: concurrency holders and rate windows for processors on one machine.

Same semantics as the Redis store: a count changed by deltas plus one row
per holder with its lease; acquire reaps holders whose lease ended before ``now``, release is
idempotent per holder, renew never moves a lease backwards. Each call is one immediate
transaction, so processes sharing the file never exceed a limit together.
"""

from __future__ import annotations

import sqlite3

from sluiceway.broker.sqlite import sqlite_path
from sluiceway.broker.sqlite_db import SqliteRunner, open_database

__all__ = ["SqliteQuotaStore", "open_sqlite_quota_store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS quota_count (key TEXT PRIMARY KEY, count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS quota_holders (
  key TEXT NOT NULL, holder TEXT NOT NULL, lease_until REAL NOT NULL, PRIMARY KEY (key, holder));
CREATE INDEX IF NOT EXISTS quota_holders_lease ON quota_holders (key, lease_until);
CREATE TABLE IF NOT EXISTS quota_rate (
  key TEXT NOT NULL, member TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (key, member));
CREATE INDEX IF NOT EXISTS quota_rate_at ON quota_rate (key, at);
"""


def _count(c: sqlite3.Connection, key: str) -> int:
    row = c.execute("SELECT count FROM quota_count WHERE key = ?", (key,)).fetchone()
    return 0 if row is None else int(row[0])


def _add(c: sqlite3.Connection, key: str, delta: int) -> None:
    """Change the count by ``delta``, never below 0."""
    c.execute("INSERT OR IGNORE INTO quota_count VALUES (?, 0)", (key,))
    c.execute("UPDATE quota_count SET count = MAX(0, count + ?) WHERE key = ?", (delta, key))


def _reap(c: sqlite3.Connection, key: str, now: float) -> int:
    gone = c.execute("DELETE FROM quota_holders WHERE key = ? AND lease_until < ?", (key, now))
    if gone.rowcount:
        _add(c, key, -gone.rowcount)
    return int(gone.rowcount)


def _extend(c: sqlite3.Connection, key: str, holder: str, lease_until: float) -> bool:
    cur = c.execute(
        "UPDATE quota_holders SET lease_until = MAX(lease_until, ?) WHERE key = ? AND holder = ?",
        (lease_until, key, holder),
    )
    return cur.rowcount == 1


class SqliteQuotaStore:
    """A :class:`~sluiceway.gates.quota_store.QuotaStore` in one SQLite file."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.db = SqliteRunner(conn, name="sqlite-quota")

    async def acquire(
        self, key: str, *, holder: str, limit: int, lease_until: float, now: float
    ) -> bool:
        def acquire(c: sqlite3.Connection) -> bool:
            _reap(c, key, now)
            if _extend(c, key, holder, lease_until):
                return True
            if _count(c, key) >= limit:
                return False
            c.execute("INSERT INTO quota_holders VALUES (?, ?, ?)", (key, holder, lease_until))
            _add(c, key, 1)
            return True

        return await self.db.run(acquire)

    async def renew(self, key: str, *, holder: str, lease_until: float) -> bool:
        def renew(c: sqlite3.Connection) -> bool:
            return _extend(c, key, holder, lease_until)

        return await self.db.run(renew)

    async def release(self, key: str, *, holder: str) -> bool:
        def release(c: sqlite3.Connection) -> bool:
            gone = c.execute(
                "DELETE FROM quota_holders WHERE key = ? AND holder = ?", (key, holder)
            )
            if gone.rowcount == 0:
                return False
            _add(c, key, -1)
            return True

        return await self.db.run(release)

    async def reap(self, key: str, *, now: float) -> int:
        """Drop holders whose lease ended before ``now``; returns how many."""

        def reap(c: sqlite3.Connection) -> int:
            return _reap(c, key, now)

        return await self.db.run(reap)

    async def reap_all(self, now: float) -> int:
        """Reap expired holders of every key (a crashed peer's too)."""

        def reap_all(c: sqlite3.Connection) -> int:
            rows = c.execute(
                "SELECT DISTINCT key FROM quota_holders WHERE lease_until < ?", (now,)
            ).fetchall()
            return sum(_reap(c, key, now) for (key,) in rows)

        return await self.db.run(reap_all)

    async def count(self, key: str) -> int:
        def count(c: sqlite3.Connection) -> int:
            return _count(c, key)

        return await self.db.run(count)

    async def admit_rate(
        self, key: str, *, member: str, limit: int, window: float, now: float
    ) -> bool:
        def admit_rate(c: sqlite3.Connection) -> bool:
            c.execute("DELETE FROM quota_rate WHERE key = ? AND at <= ?", (key, now - window))
            n = c.execute("SELECT COUNT(*) FROM quota_rate WHERE key = ?", (key,)).fetchone()[0]
            if n >= limit:
                return False
            c.execute("INSERT OR REPLACE INTO quota_rate VALUES (?, ?, ?)", (key, member, now))
            return True

        return await self.db.run(admit_rate)

    async def aclose(self) -> None:
        await self.db.aclose()


async def open_sqlite_quota_store(path: str) -> SqliteQuotaStore:
    """Open (creating if needed) the quota tables in the SQLite file at ``path`` (or URL)."""
    return SqliteQuotaStore(await open_database(sqlite_path(path), _SCHEMA))
