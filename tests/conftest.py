"""Shared fixtures: private Redis and Prometheus (docs/design-rules.md rule 3).

A missing binary skips the test locally and fails it under SLUICEWAY_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from typing import Any

import pytest

from sluiceway.localservices import (
    PrometheusServer,
    RedisServer,
    ServiceUnavailable,
    private_prometheus,
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
