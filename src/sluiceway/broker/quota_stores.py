"""Which quota store a quota gate's ``address`` means, per transport.

The processor builds one :class:`QuotaStores` at start and passes it as
``GateContext.quota_store``: a gate asks for the store of its ``address`` and every gate with the
same address shares one store (and one connection).

- ``memory``: one in-process store (the address is ignored; nothing else could see it).
- ``redis-sortedset``: ``address`` "" or the processor's own ``host:port`` shares the broker's
  client, so AUTH, TLS and DB come from the processor's Redis URL. "Own" includes the values
  file's ``urlSecret`` URL when REDIS_URL overrides it (in the guide both name ``redis:6379``);
  another ``host:port`` or a full ``redis://`` / ``rediss://`` URL gets its own client.
- ``sqlite``: ``address`` "" keeps the counters in the broker's database file; a non-empty
  address is a Redis server, as upstream.
- ``postgres``: ``address`` "" keeps the counters (``sql-quota``) in the broker's database,
  sharing its connections; a non-empty address is a Redis server.

Redis key TTLs (rate windows) are divided by the time scale. The stores'
expired holders are reaped after each of the broker's reclaim rounds (``add_lease_hook``), so
the slots of a killed processor come back even on keys that see no new traffic.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.gates.quota_store import MemoryQuotaStore, QuotaStore

__all__ = ["QuotaStores", "open_quota_stores"]


class QuotaStores:
    """``address -> QuotaStore``, one store per distinct address, closed together."""

    def __init__(
        self,
        *,
        default: QuotaStore,
        make_redis: Callable[[str], QuotaStore] | None = None,
        same_server: Callable[[str], bool] = lambda address: False,
        extra: tuple[Callable[[], Awaitable[None]], ...] = (),
    ) -> None:
        self._default = default
        self._make_redis = make_redis
        self._same_server = same_server
        self._stores: dict[str, QuotaStore] = {}
        self._extra = extra

    def __call__(self, address: str) -> QuotaStore:
        if not address or self._make_redis is None or self._same_server(address):
            return self._default
        store = self._stores.get(address)
        if store is None:
            store = self._stores[address] = self._make_redis(address)
        return store

    async def reap_expired(self, now: float) -> int:
        """Drop expired holders in every store that can (run after each reclaim round)."""
        total = 0
        for store in (self._default, *self._stores.values()):
            reap = getattr(store, "reap_all", None)
            if reap is not None:
                total += int(await reap(now))
        return total

    async def aclose(self) -> None:
        """Close the stores this object opened (not the broker's shared client)."""
        for store in self._stores.values():
            await store.aclose()
        for close in self._extra:
            await close()


def _redis_maker(processor_url: str | None, time_scale: float) -> Callable[[str], QuotaStore]:
    from sluiceway.broker.quota_redis import RedisQuotaStore, quota_url
    from sluiceway.broker.redis import connect_redis

    def make(address: str) -> QuotaStore:
        client = connect_redis(quota_url(address, processor_url=processor_url))
        return RedisQuotaStore(client, time_scale=time_scale, owns_client=True)

    return make


async def _redis_stores(broker: Broker, options: BrokerOptions) -> QuotaStores:
    from sluiceway.broker.quota_redis import RedisQuotaStore, host_port
    from sluiceway.broker.redis import RedisBroker

    if not isinstance(broker, RedisBroker):
        raise TypeError("the redis-sortedset transport needs a RedisBroker")
    url = options.url or str(options.settings.get("url") or "") or None
    own = {u for alias in (url, *options.url_aliases) if alias for u in (alias, host_port(alias))}
    default = RedisQuotaStore(
        broker.client, keyspace=broker.keyspace, time_scale=options.time_scale
    )
    stores = QuotaStores(
        default=default,
        make_redis=_redis_maker(url, options.time_scale),
        same_server=lambda address: address in own,
    )
    broker.add_lease_hook(stores.reap_expired)
    return stores


async def _sqlite_stores(broker: Broker, options: BrokerOptions) -> QuotaStores:
    from sluiceway.broker.quota_sqlite import open_sqlite_quota_store
    from sluiceway.broker.sqlite import SqliteBroker, database_path

    store = await open_sqlite_quota_store(database_path(options))
    stores = QuotaStores(
        default=store, make_redis=_redis_maker(None, options.time_scale), extra=(store.aclose,)
    )
    if isinstance(broker, SqliteBroker):
        broker.add_lease_hook(stores.reap_expired)
    return stores


async def _postgres_stores(broker: Broker, options: BrokerOptions) -> QuotaStores:
    from sluiceway.broker.postgres import PostgresBroker
    from sluiceway.broker.postgres_quota import PostgresQuotaStore

    if not isinstance(broker, PostgresBroker):
        raise TypeError("the postgres transport needs a PostgresBroker")
    stores = QuotaStores(
        default=PostgresQuotaStore(broker.db), make_redis=_redis_maker(None, options.time_scale)
    )
    broker.add_lease_hook(stores.reap_expired)
    return stores


async def open_quota_stores(transport: str, broker: Broker, options: BrokerOptions) -> QuotaStores:
    """The quota stores for a processor running ``transport`` over ``broker``."""
    if transport == "redis-sortedset":
        return await _redis_stores(broker, options)
    if transport == "sqlite":
        return await _sqlite_stores(broker, options)
    if transport == "gcp-pubsub":  # a gate's ``address`` is a Redis server, as upstream
        make_redis = _redis_maker(None, options.time_scale)
        return QuotaStores(default=MemoryQuotaStore(), make_redis=make_redis)
    if transport == "postgres":
        return await _postgres_stores(broker, options)
    return QuotaStores(default=MemoryQuotaStore())
