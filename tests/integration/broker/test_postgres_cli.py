"""``sluiceway db upgrade``, ``publish`` and ``results`` on the postgres transport, as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import asyncpg
import pytest

from sluiceway.broker.base import BrokerOptions, ResultWrite, claim_key
from sluiceway.broker.postgres import open_postgres_broker
from sluiceway.broker.postgres_schema import MIGRATIONS
from sluiceway.ports import free_port

pytestmark = pytest.mark.slow


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sluiceway", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_db_upgrade_creates_the_schema_once(postgres_dsn: str) -> None:
    first = cli("db", "upgrade", env={"DATABASE_URL": postgres_dsn})
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"schema upgraded from version 0 to {len(MIGRATIONS)}"
    again = cli("db", "upgrade", "--url", postgres_dsn)
    assert again.stdout.strip() == f"schema already at version {len(MIGRATIONS)}"


def test_db_upgrade_of_an_unreachable_database_is_one_clear_error() -> None:
    done = cli("db", "upgrade", "--url", f"postgresql://postgres@127.0.0.1:{free_port()}/x")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot connect to PostgreSQL at")


async def test_an_operator_upgrade_then_a_processor_start_agree(postgres_dsn: str) -> None:
    assert cli("db", "upgrade", "--url", postgres_dsn).returncode == 0
    broker = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
    await broker.aclose()
    conn = await asyncpg.connect(postgres_dsn)
    try:
        version = await conn.fetchval("SELECT version FROM sluiceway.schema_version")
        assert version == len(MIGRATIONS)
    finally:
        await conn.close()


async def test_publish_and_results_over_postgres(postgres_dsn: str) -> None:
    published = cli("publish", "batch", "2", "--transport", "postgres", "--url", postgres_dsn)
    assert published.returncode == 0, published.stderr
    ids = published.stdout.split()
    assert len(ids) == 2 and all(i.startswith("batch-") for i in ids)
    broker = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
    try:
        entries = await broker.peek("team-batch", 5)
        assert len(entries) == 2
        for entry in entries:
            request_id = json.loads(entry.member)["data"]["id"]
            claim = await broker.claim(
                entry, key=claim_key(request_id, ""), owner="o" * 16, lease_until=entry.score
            )
            assert claim is not None
            record = json.dumps({"id": request_id, "status_code": 200, "payload": "ok"})
            assert await broker.ack(claim, ResultWrite("result-list", record, request_id, ""))
    finally:
        await broker.aclose()
    shown = cli(
        "results", "--transport", "postgres", "--wait", "0", env={"DATABASE_URL": postgres_dsn}
    )
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout.strip().splitlines()) == 2
