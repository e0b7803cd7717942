"""Connecting to Redis: clients from addresses and the wake-up mode.

``connect_redis`` builds a redis-py asyncio client (hiredis parser) for standalone, cluster or
Sentinel deployments from one address (:mod:`sluiceway.config.redis_address`: AUTH, DB, TLS
with a private CA, mutual TLS and a server name, Sentinel with its own credentials and TLS).
Every client of the package is built here, so the processor, the coordinator, every command,
the quota stores and the ledger read an address the same way. ``make_waker`` picks the wake-up
mode the server allows (docs/design-rules.md rule 12), probing where CONFIG is denied.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
from redis.asyncio.sentinel import MasterNotFoundError
from redis.exceptions import RedisError

from sluiceway.broker.redis_failover import FollowingPool
from sluiceway.broker.redis_probe import notify_flags
from sluiceway.broker.wakeup import EventWaker, PollWaker, Waker, mode_for_flags
from sluiceway.config.redis_address import RedisAddress, TlsFiles, parse_redis_address
from sluiceway.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "AnyRedis",
    "connect_redis",
    "failure_text",
    "make_waker",
    "redis_address",
]

_log = logging.getLogger(__name__)

AnyRedis = Redis | RedisCluster
DEFAULT_MAX_CONNECTIONS = 512
_POOL_WAIT_SECONDS = 30.0


class _NamedTlsConnection(SSLConnection):
    """TLS that checks the certificate against ``ssl_server_name`` rather than the host
    (a managed Redis reached through an IP or a tunnel)."""

    def __init__(self, *, ssl_server_name: str = "", **kwargs: Any) -> None:
        self._server_name = ssl_server_name
        super().__init__(**kwargs)

    def _connection_arguments(self) -> Mapping[str, Any]:
        arguments = dict(super()._connection_arguments())
        if self._server_name:
            arguments["server_hostname"] = self._server_name
        return arguments


def redis_address(
    url: str, *, mode: str = "standalone", addrs: Sequence[str] = (), master_name: str = ""
) -> RedisAddress:
    """The address ``url`` names; with ``mode`` sentinel, the master ``master_name`` found
    through ``addrs`` (the processor's transport keys), the URL's credentials, TLS and DB."""
    if mode not in ("standalone", "cluster", "sentinel"):
        raise ConfigError(f"unknown mode {mode!r} (standalone, cluster, sentinel)", field="mode")
    address = parse_redis_address(url, field="url", sentinel_elsewhere=mode == "sentinel")
    if mode != "sentinel":
        return address
    if not addrs or not master_name:
        raise ConfigError("sentinel mode needs addrs and master_name", field="mode")
    return address.with_sentinels(list(addrs), master_name, field="addrs")


def _tls_kwargs(tls: TlsFiles) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "ssl_cert_reqs": tls.cert_reqs,
        "ssl_check_hostname": tls.check_hostname and tls.cert_reqs != "none",
    }
    if tls.ca_file:
        kwargs["ssl_ca_certs"] = tls.ca_file
    if tls.cert_file:
        kwargs["ssl_certfile"], kwargs["ssl_keyfile"] = tls.cert_file, tls.key_file
    return kwargs


def _auth_kwargs(username: str, password: str, address: RedisAddress) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if username:
        kwargs["username"] = username
    if password:
        kwargs["password"] = password
    if address.socket_timeout is not None:
        kwargs["socket_timeout"] = address.socket_timeout
    if address.socket_connect_timeout is not None:
        kwargs["socket_connect_timeout"] = address.socket_connect_timeout
    return kwargs


def _server_kwargs(address: RedisAddress) -> dict[str, Any]:
    """What every connection to the data server needs: AUTH, DB, timeouts, TLS."""
    kwargs = {"db": address.db, **_auth_kwargs(address.username, address.password, address)}
    if address.tls is not None:
        kwargs.update(_tls_kwargs(address.tls))
    return kwargs


def connect_redis(
    url: str,
    *,
    mode: str = "standalone",
    addrs: Sequence[str] = (),
    master_name: str = "",
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> AnyRedis:
    """A redis-py asyncio client for the address ``url`` names (see :func:`redis_address`).

    Standalone clients share a blocking pool of ``max_connections``: a burst of commands
    beyond it waits for a free connection instead of failing.
    """
    address = redis_address(url, mode=mode, addrs=addrs, master_name=master_name)
    common: dict[str, Any] = {"decode_responses": True, "encoding_errors": "surrogateescape"}
    server = _server_kwargs(address)
    if mode == "cluster":
        (host, port), tls = address.hosts[0], address.tls is not None
        return RedisCluster(host=host, port=port, ssl=tls, **common, **server)
    if address.sentinel:
        return _sentinel_master(address, {**common, **server})
    where: dict[str, Any] = {"connection_class": Connection}
    if address.scheme == "unix":
        where = {"connection_class": UnixDomainSocketConnection, "path": address.path}
    else:
        where["host"], where["port"] = address.hosts[0]
    if address.tls is not None:
        where["connection_class"] = _NamedTlsConnection
        where["ssl_server_name"] = address.tls.server_name
    pool = BlockingConnectionPool(
        max_connections=max_connections,
        timeout=_POOL_WAIT_SECONDS,
        **where,
        **common,
        **server,
    )
    return Redis.from_pool(pool)


class _SentinelMaster(Redis):
    """The master's client; closing it closes the sentinels' connections too."""

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        manager = getattr(self.connection_pool, "sentinel_manager", None)
        for sentinel in getattr(manager, "sentinels", ()):
            await sentinel.aclose()


def _sentinel_master(address: RedisAddress, server: dict[str, Any]) -> Redis:
    """The master of ``address.master_name`` found through the sentinels of ``address``,
    which have their own credentials and TLS."""
    from redis.asyncio.sentinel import Sentinel

    ask = _auth_kwargs(address.sentinel_username, address.sentinel_password, address)
    if address.sentinel_tls:
        ask.update(ssl=True, **_tls_kwargs(address.tls or TlsFiles()))
    if address.tls is not None:
        server["ssl"] = True
    sentinel = Sentinel(list(address.hosts), sentinel_kwargs=ask, **server)  # type: ignore[no-untyped-call]
    master = sentinel.master_for(
        address.master_name, redis_class=_SentinelMaster, connection_pool_class=FollowingPool
    )
    return cast(Redis, master)


async def failure_text(exc: BaseException, client: AnyRedis) -> str:
    """A redis-py failure as one readable line: a master not found through the sentinels
    names each sentinel and what went wrong with it (each is asked again: redis-py's own text
    is a repr of every client and the kind of error only)."""
    text = str(exc)
    manager = getattr(getattr(client, "connection_pool", None), "sentinel_manager", None)
    if not isinstance(exc, MasterNotFoundError) or manager is None:
        return text
    head = text.split(" : ", 1)[0].replace("No master found for", "no master named")
    found = []
    for sentinel in manager.sentinels:
        kwargs = sentinel.connection_pool.connection_kwargs
        try:
            await sentinel.ping()
        except (RedisError, OSError) as failed:
            found.append(f"{kwargs.get('host')}:{kwargs.get('port')}: {failed}")
    if not found:
        return f"{head}: the sentinels do not know it (check the master name)"
    return f"{head} through the sentinels ({'; '.join(found)})"


async def make_waker(client: AnyRedis, *, cluster: bool) -> Waker:
    """The wake-up mode this server allows (docs/design-rules.md rule 12), logged once; the
    flags come from CONFIG GET or, where CONFIG is denied, from a probe (``redis_probe``)."""
    db = 0 if cluster else int(cast(Redis, client).connection_pool.connection_kwargs.get("db") or 0)
    flags, how = ("", "cluster mode") if cluster else await notify_flags(client, db)
    mode = mode_for_flags(flags)
    _log.info(
        "redis broker wake-up mode: %s (notify-keyspace-events=%r, %s)", mode.value, flags, how
    )
    if "K" not in flags and "E" not in flags:
        return PollWaker()
    return EventWaker(client.pubsub(), flags=flags, db=db)
