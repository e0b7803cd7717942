"""One SQLite connection per runner: each call one immediate transaction, shared files in WAL."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from sluiceway.broker.sqlite_db import SqliteRunner, open_database
from sluiceway.errors import BrokerError

SCHEMA = "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);"


def put(key: str, value: int) -> Callable[[sqlite3.Connection], None]:
    def put_kv(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, value))

    return put_kv


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM kv").fetchone()[0])


async def test_open_creates_parents_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "q.db"
    runner = SqliteRunner(await open_database(str(path), SCHEMA))
    try:
        mode = await runner.run(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0])
        assert path.exists() and mode == "wal"
    finally:
        await runner.aclose()


async def test_a_failure_before_commit_rolls_the_whole_call_back(tmp_path: Path) -> None:
    runner = SqliteRunner(await open_database(str(tmp_path / "q.db"), SCHEMA))
    try:
        await runner.run(put("a", 1))

        def crash(name: str) -> None:
            raise RuntimeError(f"crash in {name}")

        runner.before_commit = crash
        with pytest.raises(RuntimeError, match="crash in put_kv"):
            await runner.run(put("b", 2))
        runner.before_commit = None
        assert await runner.run(count) == 1
    finally:
        await runner.aclose()


async def test_sqlite_errors_become_broker_errors_naming_the_call(tmp_path: Path) -> None:
    runner = SqliteRunner(await open_database(str(tmp_path / "q.db"), SCHEMA))
    try:

        def bad_sql(conn: sqlite3.Connection) -> None:
            conn.execute("SELECT * FROM missing")

        with pytest.raises(BrokerError, match="sqlite bad_sql failed"):
            await runner.run(bad_sql)
        assert await runner.run(count) == 0  # the runner still works
    finally:
        await runner.aclose()


async def test_two_runners_on_one_file_see_each_others_commits(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    first = SqliteRunner(await open_database(path, SCHEMA), name="first")
    second = SqliteRunner(await open_database(path, SCHEMA), name="second")
    try:
        await first.run(put("a", 1))
        await second.run(put("b", 2))
        assert await first.run(count) == 2
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_bad_schema_is_a_broker_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with pytest.raises(BrokerError, match=f"cannot open sqlite database {path}"):
        await open_database(str(path), "not sql at all;")
