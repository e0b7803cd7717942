"""Brokers: where queue entries, claims, retries and results live (protocol in ``base``).

Backends register here by transport name (docs/design-rules.md rule 6: unknown names are
configuration errors). Each value is ``"module:factory"``; the factory is an ``async`` callable
taking :class:`~sluiceway.broker.base.BrokerOptions` and returning an open
:class:`~sluiceway.broker.base.Broker`. Modules are imported only when chosen.

Files:

- ``base``: the ``Broker`` protocol: where queue entries wait, are claimed, retried and answered;
- ``peek_order``: the order ``peek`` reads a queue in (by deadline, or its reverse under overload);
- ``memory``: the ``memory`` broker, everything in one process, nothing survives a restart;
- ``sqlite`` (the ``sqlite`` broker: embedded, durable, one machine) with ``sqlite_db`` (one
  connection on its own thread, one immediate transaction per call);
- ``redis`` (the ``redis-sortedset`` broker, upstream's keys and formats) with ``redis_connect``
  (clients from URLs, the wake-up mode), ``redis_probe`` (what the Redis user may do: the
  notification flags without CONFIG, the ACL checked at open), ``redis_failover`` (leaving a
  master the sentinels demote, at once), ``redis_batch`` (script calls
  coalesced per event-loop turn), ``wakeup`` (keyspace notifications, else polling),
  ``cancel_cache`` (fewer round trips for cancellation checks), ``keys`` (every Redis key, in
  one place) and ``lua`` (the scripts);
- ``postgres`` (the ``postgres`` broker: many processors on one database) with ``postgres_db``
  (the connection pool, LISTEN, migrations), ``postgres_schema`` (every table, function and
  statement), ``postgres_batch`` (acks of one event-loop turn as one statement);
- ``pubsub`` (the ``gcp-pubsub`` transport) with ``pubsub_api`` (the RPCs behind one small
  protocol), ``pubsub_feed`` (one subscription and its puller), ``pubsub_batch`` (calls coalesced
  per event-loop turn), ``pubsub_messages`` (messages as queue entries, pure), ``pubsub_health``
  (consumer readiness, pure) and ``pubsub_settings`` (the transport's settings);
- quota stores: ``quota_redis``, ``quota_sqlite``, ``postgres_quota`` (``sql-quota``), and
  ``quota_stores``, which picks the store a quota gate's ``address`` means per transport;
- ``redis_gates``: Redis for the Redis-backed gates (the ``redis`` budget key, the
  ``redis-leased-rate`` bucket);
- operator reads: ``inspect`` (queue counts and result lists) and ``redis_inspect`` (its Redis
  side); ``address``: a broker named by ``--transport`` / ``--url``, checked before it opens;
  ``wait``: ``--wait-for-broker``; ``leases``: hooks after reclaim rounds, so leases riding on a
  claim expire with it; ``command``: ``sluiceway db upgrade`` (the PostgreSQL schema).
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
