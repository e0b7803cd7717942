"""Connecting to Redis: clients from URLs and the wake-up mode.

``connect_redis`` builds a redis-py asyncio client (hiredis parser) for standalone, cluster or
sentinel deployments; AUTH, TLS and DB come from the URL. ``make_waker`` picks the wake-up mode
the server allows (docs/design-rules.md rule 12).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import urlsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import parse_url
from redis.exceptions import ResponseError

from sluiceway.broker.wakeup import EventWaker, PollWaker, Waker, mode_for_flags
from sluiceway.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "AnyRedis",
    "connect_redis",
    "make_waker",
]

_log = logging.getLogger(__name__)

AnyRedis = Redis | RedisCluster
DEFAULT_MAX_CONNECTIONS = 512
_POOL_WAIT_SECONDS = 30.0


def connect_redis(
    url: str,
    *,
    mode: str = "standalone",
    addrs: Sequence[str] = (),
    master_name: str = "",
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> AnyRedis:
    """A redis-py asyncio client for ``url`` (AUTH, TLS and DB come from the URL).

    Standalone clients share a blocking pool of ``max_connections``: a burst of commands
    beyond it waits for a free connection instead of failing.
    """
    common: dict[str, Any] = {"decode_responses": True, "encoding_errors": "surrogateescape"}
    if mode == "cluster":
        return RedisCluster.from_url(url, **common)
    if mode == "sentinel":
        return _sentinel_master(url, addrs, master_name, common)
    if mode != "standalone":
        raise ConfigError(f"unknown mode {mode!r} (standalone, cluster, sentinel)", field="mode")
    pool = BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=_POOL_WAIT_SECONDS, **common
    )
    return Redis.from_pool(pool)


def _sentinel_master(
    url: str, addrs: Sequence[str], master_name: str, common: dict[str, Any]
) -> Redis:
    """The master of ``master_name`` found through the sentinels at ``addrs``.

    The URL's host is not used (the sentinels name the master), but its AUTH, DB and TLS are:
    they apply to the master connections.
    """
    from redis.asyncio.sentinel import Sentinel

    if not addrs or not master_name:
        raise ConfigError("sentinel mode needs addrs and master_name", field="mode")
    hosts = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in addrs]
    from_url: dict[str, Any] = dict(parse_url(url))
    for where in ("host", "port", "path", "connection_class"):
        from_url.pop(where, None)
    kwargs = {**from_url, **common, "ssl": urlsplit(url).scheme == "rediss"}
    sentinel = Sentinel(hosts, **kwargs)  # type: ignore[no-untyped-call]
    return cast(Redis, sentinel.master_for(master_name))


async def _notify_flags(client: AnyRedis) -> str:
    """``notify-keyspace-events`` of the server, or "" when CONFIG is not allowed."""
    try:
        reply = await client.config_get("notify-keyspace-events")
    except ResponseError:
        return ""
    return str(reply.get("notify-keyspace-events", ""))


async def make_waker(client: AnyRedis, *, cluster: bool) -> Waker:
    """The wake-up mode this server allows (docs/design-rules.md rule 12), logged once."""
    flags = "" if cluster else await _notify_flags(client)
    mode = mode_for_flags(flags)
    _log.info("redis broker wake-up mode: %s (notify-keyspace-events=%r)", mode.value, flags)
    if "K" not in flags and "E" not in flags:
        return PollWaker()
    db = int(cast(Redis, client).connection_pool.connection_kwargs.get("db", 0) or 0)
    return EventWaker(client.pubsub(), flags=flags, db=db)
