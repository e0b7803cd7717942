"""One SQLite connection on its own thread, one immediate transaction per call.

Shared by the ``sqlite`` broker and the SQLite quota store. WAL mode lets several processes on
one machine share a file: ``BEGIN IMMEDIATE`` serialises writers, so each operation is atomic
and isolated across processes. ``synchronous=NORMAL`` in WAL mode survives a process crash (a
power loss may drop the last commits).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from sluiceway.errors import BrokerError

__all__ = ["SqliteRunner", "open_database"]

T = TypeVar("T")


def _connect(path: str, schema: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.executescript(schema)
    return conn


class SqliteRunner:
    """One SQLite connection on its own thread; each call is one immediate transaction.

    ``before_commit`` is a fault hook for tests: it runs inside the transaction, after the
    statements and before ``COMMIT``, with the operation's name; raising there rolls the whole
    operation back, as a crash before the commit would.
    """

    def __init__(self, conn: sqlite3.Connection, *, name: str = "sqlite") -> None:
        self._conn = conn
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.before_commit: Callable[[str], None] | None = None

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one immediate transaction on the database thread."""
        name = getattr(fn, "__name__", "operation")

        def run() -> T:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self._conn)
                if self.before_commit is not None:
                    self.before_commit(name)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return out

        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, run)
        except sqlite3.Error as exc:
            raise BrokerError(f"sqlite {name} failed: {exc}") from exc

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._conn.close)
        self._thread.shutdown(wait=True)


async def open_database(path: str, schema: str) -> sqlite3.Connection:
    """Open ``path`` in WAL mode (parents created) and apply ``schema``."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        return await asyncio.to_thread(_connect, path, schema)
    except sqlite3.Error as exc:
        raise BrokerError(f"cannot open sqlite database {path}: {exc}") from exc
