"""A broker named on the command line (``--transport``, ``--url``), checked before it opens.

``publish``, ``results``, ``cancel`` and ``status`` talk to a broker another process runs
against. A Redis address needs its scheme; a SQLite database is a file path, and a command
that only reads (or removes) never creates one: a mistyped path is an error, not a new empty
database.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.config.urls import check_redis_url, check_sqlite_path
from sluiceway.errors import ConfigError

__all__ = ["CLI_TRANSPORTS", "broker_options", "open_named_broker"]

CLI_TRANSPORTS = ("redis-sortedset", "postgres", "sqlite")


def broker_options(
    transport: str,
    url: str | None,
    *,
    must_exist: bool,
    env: Mapping[str, str] | None = None,
    time_scale: float = 1.0,
) -> BrokerOptions:
    """The options to open ``transport`` at ``url`` (Redis: else ``$REDIS_URL``; PostgreSQL:
    else ``$DATABASE_URL`` or ``$SQL_URL``).

    ConfigError naming ``--transport`` or ``--url`` when they cannot work.
    """
    env = os.environ if env is None else env
    if transport not in CLI_TRANSPORTS:
        hint = " (it lives inside one process)" if transport == "memory" else ""
        known = ", ".join(CLI_TRANSPORTS)
        raise ConfigError(
            f"unknown transport {transport!r}{hint}; use {known}", field="--transport"
        )
    if transport == "redis-sortedset":
        address = url or env.get("REDIS_URL") or ""
        if not address:
            raise ConfigError("give a redis:// URL or set REDIS_URL", field="--url")
        field = "--url" if url else "REDIS_URL"
        return BrokerOptions(url=check_redis_url(address, field=field), time_scale=time_scale)
    if transport == "postgres":
        dsn = url or env.get("DATABASE_URL") or env.get("SQL_URL") or ""
        if not dsn.startswith(("postgres://", "postgresql://")):
            raise ConfigError("give a postgresql:// DSN or set DATABASE_URL", field="--url")
        return BrokerOptions(url=dsn, time_scale=time_scale)
    if not url:
        raise ConfigError("give the SQLite database file", field="--url")
    from sluiceway.broker.sqlite import sqlite_path

    path = sqlite_path(check_sqlite_path(url, field="--url"))
    if must_exist and not Path(path).is_file():
        raise ConfigError(f"no SQLite database at {path}", field="--url")
    return BrokerOptions(url=path, time_scale=time_scale)


async def open_named_broker(
    transport: str, url: str | None, *, must_exist: bool, time_scale: float = 1.0
) -> Broker:
    """Open the broker a command's flags name (see :func:`broker_options`)."""
    from sluiceway.broker import open_broker

    options = broker_options(transport, url, must_exist=must_exist, time_scale=time_scale)
    return await open_broker(transport, options)
