"""The ``sql-quota`` store: quota holders and rate windows in the broker's PostgreSQL database.

Same semantics as the Redis quota store: a count per key changed by deltas plus one row per
holder with its lease (renewed on the claim heartbeat); acquire reaps holders whose lease ended
before ``now`` and is idempotent per holder, release is idempotent, renew never moves a lease
backwards; rate limits keep one row per unique admission in a sliding window. Each call is one
function call in its own transaction; acquirers of one key queue on its count row and rate
admissions on a per-key advisory lock, so processors together never exceed a limit.
"""

from __future__ import annotations

from sluiceway.broker.postgres_db import PostgresDatabase
from sluiceway.broker.postgres_schema import SQL

__all__ = ["PostgresQuotaStore", "open_postgres_quota_store"]


class PostgresQuotaStore:
    """A :class:`~sluiceway.gates.quota_store.QuotaStore` over PostgreSQL (``sql-quota``)."""

    def __init__(self, db: PostgresDatabase, *, owns_db: bool = False) -> None:
        self.db = db
        self._owns = owns_db

    async def acquire(
        self, key: str, *, holder: str, limit: int, lease_until: float, now: float
    ) -> bool:
        return bool(await self.db.fetchval(SQL.QUOTA_ACQUIRE, key, holder, limit, lease_until, now))

    async def renew(self, key: str, *, holder: str, lease_until: float) -> bool:
        status = await self.db.run(lambda c: c.execute(SQL.QUOTA_RENEW, key, holder, lease_until))
        return str(status).endswith(" 1")

    async def release(self, key: str, *, holder: str) -> bool:
        return bool(await self.db.fetchval(SQL.QUOTA_RELEASE, key, holder))

    async def count(self, key: str) -> int:
        return int(await self.db.fetchval(SQL.QUOTA_COUNT, key))

    async def reap(self, key: str, *, now: float) -> int:
        """Drop holders of ``key`` whose lease ended before ``now``; returns how many."""
        return int(await self.db.fetchval(SQL.QUOTA_REAP, key, now))

    async def reap_all(self, now: float) -> int:
        """Reap expired holders of every key (a killed processor's too)."""
        return int(await self.db.fetchval(SQL.QUOTA_REAP_ALL, now))

    async def admit_rate(
        self, key: str, *, member: str, limit: int, window: float, now: float
    ) -> bool:
        return bool(await self.db.fetchval(SQL.ADMIT_RATE, key, member, limit, window, now))

    async def aclose(self) -> None:
        if self._owns:
            await self.db.aclose()


async def open_postgres_quota_store(dsn: str) -> PostgresQuotaStore:
    """A store with its own connections to ``dsn`` (the schema is created or migrated)."""
    db = PostgresDatabase(dsn)
    await db.open()
    return PostgresQuotaStore(db, owns_db=True)
