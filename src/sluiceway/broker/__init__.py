"""Brokers: where queue entries, claims, retries and results live (protocol in ``base``).

Backends register here by transport name (docs/design-rules.md rule 6: unknown names are
configuration errors). Each value is ``"module:factory"``; the factory is an ``async`` callable
taking :class:`~sluiceway.broker.base.BrokerOptions` and returning an open
:class:`~sluiceway.broker.base.Broker`. Modules are imported only when chosen.
"""

from __future__ import annotations

import importlib
from typing import cast

from sluiceway.broker.base import Broker, BrokerFactory, BrokerOptions
from sluiceway.errors import ConfigError

__all__ = ["BROKER_TYPES", "open_broker"]

BROKER_TYPES: dict[str, str] = {
    "gcp-pubsub": "sluiceway.broker.pubsub:open_pubsub_broker",
    "memory": "sluiceway.broker.memory:open_memory_broker",
    "postgres": "sluiceway.broker.postgres:open_postgres_broker",
    "redis-sortedset": "sluiceway.broker.redis:open_redis_broker",
    "sqlite": "sluiceway.broker.sqlite:open_sqlite_broker",
}


def broker_factory(transport: str) -> BrokerFactory:
    """The factory registered for ``transport``; ConfigError when unknown or not installed."""
    target = BROKER_TYPES.get(transport)
    if target is None:
        known = ", ".join(sorted(BROKER_TYPES))
        raise ConfigError(f"unknown transport {transport!r} (known: {known})", field="transport")
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"transport {transport!r} is not available: {exc}", field="transport"
        ) from exc
    return cast(BrokerFactory, getattr(module, attr))


async def open_broker(transport: str, options: BrokerOptions) -> Broker:
    """Open the broker registered under ``transport``."""
    return await broker_factory(transport)(options)
