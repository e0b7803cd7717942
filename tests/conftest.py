"""Shared fixtures: private Redis, Prometheus, PostgreSQL and Pub/Sub emulator (design rule 3).

A missing binary skips the test locally and fails it under SLUICEWAY_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from typing import Any

import pytest

from sluiceway.localservices import (
    PostgresServer,
    PrometheusServer,
    PubSubEmulator,
    RedisServer,
    ServiceUnavailable,
    private_postgres,
    private_prometheus,
    private_pubsub_emulator,
    private_redis,
    services_required,
)


def _unavailable(exc: ServiceUnavailable) -> None:
    if services_required():
        pytest.fail(f"required service missing: {exc}")
    pytest.skip(str(exc))


def _enter(stack: ExitStack, cm: AbstractContextManager[Any]) -> Any:
    try:
        return stack.enter_context(cm)
    except ServiceUnavailable as exc:
        _unavailable(exc)


@pytest.fixture(scope="session")
def _session_pubsub() -> Iterator[PubSubEmulator]:
    # The emulator installs from no registry: absent, it is a skip even in CI; installed, a
    # failure to start fails the test.
    try:
        emulator = private_pubsub_emulator()
        server = emulator.__enter__()
    except ServiceUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        emulator.__exit__(None, None, None)


@pytest.fixture
def pubsub_emulator(
    _session_pubsub: PubSubEmulator, monkeypatch: pytest.MonkeyPatch
) -> PubSubEmulator:
    """A private Pub/Sub emulator (shared by the session); clients of this test find it
    through ``PUBSUB_EMULATOR_HOST``. Tests name their own topics, so they do not mix."""
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", _session_pubsub.host_port)
    return _session_pubsub


@pytest.fixture(scope="session")
def _session_redis() -> Iterator[RedisServer]:
    with ExitStack() as stack:
        yield _enter(stack, private_redis(keyspace_events="KEA"))


@pytest.fixture
def redis_server(_session_redis: RedisServer) -> RedisServer:
    """A private redis-server (keyspace events on), emptied before each test."""
    import redis

    client = redis.Redis(host=_session_redis.host, port=_session_redis.port)
    try:
        client.flushall()
        client.config_set("notify-keyspace-events", "KEA")
    finally:
        client.close()
    return _session_redis


@pytest.fixture
def redis_factory() -> Iterator[Callable[..., RedisServer]]:
    """Starts extra private redis-servers (e.g. with keyspace events off); all stop at teardown."""
    with ExitStack() as stack:

        def start(**kwargs: Any) -> RedisServer:
            server: RedisServer = _enter(stack, private_redis(**kwargs))
            return server

        yield start


@pytest.fixture
def prometheus_factory() -> Iterator[Callable[..., PrometheusServer]]:
    """Starts private Prometheus servers scraping the given targets; all stop at teardown."""
    with ExitStack() as stack:

        def start(targets: list[str], **kwargs: Any) -> PrometheusServer:
            server: PrometheusServer = _enter(stack, private_prometheus(targets, **kwargs))
            return server

        yield start


_database_names = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL server (missing binaries: skip, or fail when services are required;
    binaries present but the server does not start: always a failure)."""
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
    name = f"t{next(_database_names)}_{id(postgres_server) % 10_000}"
    admin = await asyncpg.connect(postgres_server.dsn())
    try:
        await admin.execute(f"CREATE DATABASE {name}")
        yield postgres_server.dsn(name)
        await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
    finally:
        await admin.close()
