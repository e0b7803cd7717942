"""Connections to PostgreSQL: a pool for statements, one connection for LISTEN, migrations.

An unreachable database at start-up is one :class:`~sluiceway.errors.BrokerError` naming the
server. A connection lost mid-run logs one warning line, never a driver traceback (the pool keeps
no connection floor to restore in the background, whose failures asyncpg would log with their
tracebacks: connections come back as statements need them), and each statement that hit it is
retried with exponential backoff on a fresh connection until ``reconnect_for`` seconds have
passed; then it fails with a BrokerError (the caller's own retry path takes over, nothing is
dropped). Every operation is one statement in its own transaction, so a retried statement either
ran once or not at all; an ack whose reply was lost comes back fenced (False), never as a second
result.

``round_trips`` counts statements sent, for the benchmark's round trips per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import asyncpg

from sluiceway.broker.postgres_schema import MIGRATION_LOCK, MIGRATIONS, SQL
from sluiceway.errors import BrokerError

__all__ = ["CONNECTION_ERRORS", "PostgresDatabase", "dsn_from", "migrate", "redact"]

T = TypeVar("T")
log = logging.getLogger(__name__)

CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.InterfaceError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.CrashShutdownError,
    # A connection the server closed while it sat idle in the pool fails its next statement
    # with a protocol-state error rather than a connection error.
    asyncpg.exceptions.InternalClientError,
)
_BACKOFF_START = 0.05
_BACKOFF_MAX = 2.0
_OUTAGE_QUIET_SECONDS = 30.0


def dsn_from(url: str | None, env: dict[str, str] | None = None) -> str:
    """The DSN: ``url`` when given, else ``DATABASE_URL``, else ``SQL_URL`` (upstream's)."""
    source = env if env is not None else dict(os.environ)
    dsn = url or source.get("DATABASE_URL") or source.get("SQL_URL") or ""
    if not dsn:
        raise BrokerError("no PostgreSQL address: set url in the transport config or DATABASE_URL")
    return dsn


def redact(dsn: str) -> str:
    """``host:port/database`` of a DSN, without credentials, for messages."""
    parts = urlsplit(dsn)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'}"


async def migrate(conn: asyncpg.Connection) -> tuple[int, int]:
    """Bring the schema to the newest version; returns (version before, version after)."""
    async with conn.transaction():
        await conn.execute(SQL.LOCK, MIGRATION_LOCK)
        before = 0
        if await conn.fetchval(SQL.HAS_VERSION_TABLE):
            before = int(await conn.fetchval(SQL.VERSION))
        if before > len(MIGRATIONS):
            raise BrokerError(
                f"the database schema is version {before}, newer than this sluiceway knows "
                f"({len(MIGRATIONS)}): upgrade sluiceway"
            )
        for script in MIGRATIONS[before:]:
            await conn.execute(script)
        if before < len(MIGRATIONS):
            await conn.execute(f"{SQL.SET_VERSION} VALUES ({len(MIGRATIONS)})")
    return before, len(MIGRATIONS)


class _Outage:
    """One warning when the connection is lost, one line when it is back.

    Pooled connections the server dropped fail one by one as they are next used, possibly
    after a fresh one already worked: failures within :data:`_OUTAGE_QUIET_SECONDS` of the
    last warning belong to the same outage and are not reported again.
    """

    def __init__(self, where: str) -> None:
        self._where = where
        self._since: float | None = None
        self._warned_at: float | None = None

    def lost(self, exc: BaseException) -> bool:
        """Note a failure; True when it starts a new outage (the caller drops stale links)."""
        if self._since is not None:
            return False
        now = self._since = asyncio.get_running_loop().time()
        if self._warned_at is not None and now - self._warned_at < _OUTAGE_QUIET_SECONDS:
            return False
        self._warned_at = now
        log.warning("lost the PostgreSQL connection to %s (%s); reconnecting", self._where, exc)
        return True

    def back(self) -> None:
        if self._since is not None:
            took = asyncio.get_running_loop().time() - self._since
            self._since = None
            log.info("reconnected to PostgreSQL at %s after %.1f s", self._where, took)


class PostgresDatabase:
    """A connection pool plus a listening connection; statements retried across outages."""

    def __init__(self, dsn: str, *, max_size: int = 10, reconnect_for: float = 60.0) -> None:
        self.dsn = dsn
        self.where = redact(dsn)
        self.round_trips = 0
        self._max_size = max_size
        self._reconnect_for = reconnect_for
        self._pool: asyncpg.Pool | None = None
        self._outage = _Outage(self.where)
        self._listener: asyncpg.Connection | None = None
        self._channels: dict[str, Callable[[str], None]] = {}
        self._on_reconnect: list[Callable[[], None]] = []
        self._on_lost: list[Callable[[], None]] = []
        self._relisten: asyncio.Task[None] | None = None
        self._closed = False

    async def open(self, *, migrate_schema: bool = True) -> None:
        """Connect (one clear error when the server is unreachable) and migrate the schema."""
        try:
            self._pool = await asyncpg.create_pool(
                self.dsn, min_size=0, max_size=self._max_size, timeout=10.0
            )
            conn = await self._pool.acquire()  # min_size 0 connects nothing: try it here
        except (*CONNECTION_ERRORS, asyncpg.PostgresError) as exc:
            if self._pool is not None:
                self._pool.terminate()
                self._pool = None
            raise BrokerError(f"cannot connect to PostgreSQL at {self.where}: {exc}") from exc
        try:
            if migrate_schema:
                await migrate(conn)
        finally:
            await self._pool.release(conn)

    @property
    def listening(self) -> bool:
        """True while the LISTEN connection is up (notifications are being received)."""
        listener = self._listener
        return listener is not None and not listener.is_closed()

    async def run(self, step: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """Run ``step`` on a pooled connection, retrying it on a fresh one after a lost link."""
        if self._pool is None:
            raise BrokerError("the PostgreSQL broker is not open")
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._reconnect_for
        backoff = _BACKOFF_START
        while True:
            self.round_trips += 1
            try:
                out = await self._on_pooled(step)
            except CONNECTION_ERRORS as exc:
                if self._closed or loop.time() + backoff > give_up:
                    raise BrokerError(f"PostgreSQL at {self.where} unreachable: {exc}") from exc
                if self._outage.lost(exc):
                    await self._pool.expire_connections()  # the others are likely dead too
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)
                continue
            except asyncpg.PostgresError as exc:
                raise BrokerError(f"PostgreSQL statement failed: {exc}") from exc
            self._outage.back()
            return out

    async def _on_pooled(self, step: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """Run ``step``; a connection that failed is closed, not handed back for reuse."""
        assert self._pool is not None
        conn = await self._pool.acquire()
        try:
            return await step(conn)
        except CONNECTION_ERRORS:
            # A link the driver already dropped refuses terminate(): the cause stays the error.
            with contextlib.suppress(asyncpg.exceptions.InterfaceError):
                conn.terminate()
            raise
        finally:
            await self._pool.release(conn)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self.run(lambda c: c.fetchval(sql, *args))

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        return list(await self.run(lambda c: c.fetch(sql, *args)))

    # -- notifications ---------------------------------------------------------------------

    def on_reconnect(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` after the listening connection came back (notifications may be lost)."""
        self._on_reconnect.append(hook)

    def on_lost(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` when the listening connection drops (notifications stop)."""
        self._on_lost.append(hook)

    async def listen(self, channel: str, callback: Callable[[str], None]) -> None:
        """Deliver each ``NOTIFY channel, payload`` to ``callback(payload)``."""
        self._channels[channel] = callback
        if self._listener is None:
            try:
                await self._connect_listener()
            except (*CONNECTION_ERRORS, asyncpg.PostgresError) as exc:
                raise BrokerError(f"cannot LISTEN on PostgreSQL at {self.where}: {exc}") from exc
        elif self.listening:
            await self._listener.add_listener(channel, self._deliver)

    def _deliver(self, _conn: Any, _pid: int, channel: str, payload: str) -> None:
        callback = self._channels.get(channel)
        if callback is not None:
            callback(payload)

    async def _connect_listener(self) -> None:
        conn = await asyncpg.connect(self.dsn, timeout=10.0)
        try:
            for channel in self._channels:
                await conn.add_listener(channel, self._deliver)
        except BaseException:
            conn.terminate()  # a link cut while listening is set up is not left to the collector
            raise
        conn.add_termination_listener(self._listener_lost)
        self._listener = conn

    def _listener_lost(self, _conn: Any) -> None:
        if self._closed or (self._relisten is not None and not self._relisten.done()):
            return
        for hook in self._on_lost:
            hook()
        self._relisten = asyncio.get_running_loop().create_task(self._reconnect_listener())

    async def _reconnect_listener(self) -> None:
        backoff = _BACKOFF_START
        while not self._closed:
            try:
                await self._connect_listener()
            except (*CONNECTION_ERRORS, asyncpg.PostgresError) as exc:
                self._outage.lost(exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)
                continue
            self._outage.back()
            for hook in self._on_reconnect:
                hook()
            return

    async def aclose(self) -> None:
        self._closed = True
        if self._relisten is not None:
            self._relisten.cancel()
            with contextlib.suppress(BaseException):
                await self._relisten
        if self._listener is not None:
            with contextlib.suppress(*CONNECTION_ERRORS):
                await self._listener.close(timeout=5.0)
        if self._pool is not None:
            with contextlib.suppress(*CONNECTION_ERRORS):
                await asyncio.wait_for(self._pool.close(), 10.0)
