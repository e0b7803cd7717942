"""A private PostgreSQL server for the ``postgres`` broker tests, and a fresh database per test.

Binaries absent: skip with the reason (a failure under SLUICEWAY_REQUIRE_SERVICES=1). Binaries
present but the server does not start: a failure, always.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack

import pytest

from sluiceway.localservices import (
    PostgresServer,
    ServiceUnavailable,
    private_postgres,
    services_required,
)

_names = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    with ExitStack() as stack:
        try:
            server = stack.enter_context(private_postgres())
        except ServiceUnavailable as exc:
            if services_required():
                pytest.fail(f"required service missing: {exc}")
            pytest.skip(str(exc))
        yield server


@pytest.fixture
async def postgres_dsn(postgres_server: PostgresServer) -> AsyncIterator[str]:
    """The DSN of a new, empty database on the private server (dropped afterwards)."""
    asyncpg = pytest.importorskip("asyncpg")
    name = f"t{next(_names)}_{id(postgres_server) % 10_000}"
    admin = await asyncpg.connect(postgres_server.dsn())
    try:
        await admin.execute(f"CREATE DATABASE {name}")
        yield postgres_server.dsn(name)
        await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
    finally:
        await admin.close()
