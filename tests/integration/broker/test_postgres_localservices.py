"""The private PostgreSQL launcher: it starts, answers and stops; missing binaries are a
``ServiceUnavailable`` (a skip, or a failure under SLUICEWAY_REQUIRE_SERVICES=1); installed
binaries that do not start are an error, never a skip."""

from __future__ import annotations

import glob
import os
import pwd
import socket
from pathlib import Path

import asyncpg
import pytest

import sluiceway.localservices as localservices
from sluiceway.localservices import PostgresServer, ServiceUnavailable, private_postgres

pytestmark = pytest.mark.slow


async def test_the_private_server_answers_as_a_private_cluster(
    postgres_server: PostgresServer,
) -> None:
    conn = await asyncpg.connect(postgres_server.dsn())
    try:
        assert await conn.fetchval("SELECT current_user") == "postgres"
        assert await conn.fetchval("SHOW listen_addresses") == "127.0.0.1"
        assert int(await conn.fetchval("SHOW port")) == postgres_server.port
    finally:
        await conn.close()
    assert postgres_server.port != 5432


def test_the_cluster_belongs_to_the_postgres_user(postgres_server: PostgresServer) -> None:
    owner = Path(postgres_server.data_dir).stat().st_uid
    assert owner == (pwd.getpwnam("postgres").pw_uid if os.geteuid() == 0 else os.geteuid())


def test_missing_binaries_are_service_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glob, "glob", lambda pattern: [])
    with pytest.raises(ServiceUnavailable, match="apt-get install postgresql"), private_postgres():
        pass


def test_installed_binaries_that_cannot_start_are_an_error(
    monkeypatch: pytest.MonkeyPatch, postgres_server: PostgresServer
) -> None:
    # The session server proves the binaries are here; a port already taken stops a new one.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(localservices, "free_port", lambda: taken.getsockname()[1])
        with pytest.raises(RuntimeError, match="postgres exited"), private_postgres():
            pass
