"""The Redis quota store: concurrency holders and rate windows shared by every processor.

Concurrency mode keeps ``quota:<attribute>:<value>`` a STRING equal to the live holder count
(readable with ``GET``) and the holders in ``...:holders`` (ZSET holder token ->
lease expiry), both changed only by the Lua scripts of :mod:`sluiceway.broker.lua`: acquire
reaps expired holders and takes a slot by delta, release is idempotent per holder, renew rides
on the claim heartbeat. A crashed processor's holders lapse with their lease,
so a slot never leaks for longer than one claim lease, and the limit holds across processes.

Rate-limit mode: a ZSET sliding window with one unique member per admission; the key expires
after two windows (wall time: the window divided by the time scale).
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import RedisError

from sluiceway.broker import lua
from sluiceway.broker.keys import Keyspace
from sluiceway.broker.redis_connect import AnyRedis, connect_redis
from sluiceway.config.redis_address import parse_redis_address
from sluiceway.errors import BrokerError

__all__ = [
    "QUOTA_INDEX_KEY",
    "RedisQuotaStore",
    "host_port",
    "open_redis_quota_store",
    "quota_url",
]

_NO_WINDOW_TTL_SECONDS = 3600.0
# SET of every concurrency count key in use, so a survivor can reap the holders of keys only a
# dead processor touched (no KEYS scans).
QUOTA_INDEX_KEY = "sluiceway:quota-keys"


class RedisQuotaStore:
    """A :class:`~sluiceway.gates.quota_store.QuotaStore` over Redis; ``now`` is passed in."""

    def __init__(
        self,
        client: AnyRedis,
        *,
        keyspace: Keyspace | None = None,
        time_scale: float = 1.0,
        owns_client: bool = False,
    ) -> None:
        self._client = client
        self._keys = keyspace or Keyspace()
        self._scale = time_scale
        self._owns = owns_client
        names = ("quota_acquire", "quota_release", "quota_renew", "quota_reap", "rate_limit")
        self._scripts = {n: client.register_script(lua.source(n)) for n in names}
        self._indexed: set[str] = set()

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        try:
            return await self._scripts[name](keys=keys, args=args)
        except RedisError as exc:
            raise BrokerError(f"redis quota {name} failed: {exc}") from exc

    async def acquire(
        self, key: str, *, holder: str, limit: int, lease_until: float, now: float
    ) -> bool:
        q = self._keys.quota_of(key)
        if key not in self._indexed:
            await self._index(key)
        admitted, _count = await self._run(
            "quota_acquire", [q.count, q.holders], [now, limit, holder, lease_until]
        )
        return int(admitted) == 1

    async def _index(self, key: str) -> None:
        try:
            await self._client.sadd(QUOTA_INDEX_KEY, key)
        except RedisError as exc:
            raise BrokerError(f"redis quota index failed: {exc}") from exc
        self._indexed.add(key)

    async def renew(self, key: str, *, holder: str, lease_until: float) -> bool:
        q = self._keys.quota_of(key)
        (status,) = await self._run("quota_renew", [q.holders], [lease_until, holder])
        return int(status) == 1

    async def release(self, key: str, *, holder: str) -> bool:
        q = self._keys.quota_of(key)
        return int(await self._run("quota_release", [q.count, q.holders], [holder])) == 1

    async def reap(self, key: str, *, now: float) -> int:
        """Drop holders whose lease ended before ``now``; returns how many."""
        q = self._keys.quota_of(key)
        return int(await self._run("quota_reap", [q.count, q.holders], [now]))

    async def reap_all(self, now: float) -> int:
        """Reap expired holders of every indexed concurrency key (a crashed peer's too)."""
        try:
            indexed = await self._client.smembers(QUOTA_INDEX_KEY)
        except RedisError as exc:
            raise BrokerError(f"redis quota index read failed: {exc}") from exc
        total = 0
        for key in sorted({*self._indexed, *(str(k) for k in indexed)}):
            total += await self.reap(key, now=now)
        return total

    async def count(self, key: str) -> int:
        try:
            raw = await self._client.get(key)
        except RedisError as exc:
            raise BrokerError(f"redis quota count failed: {exc}") from exc
        try:
            return int(raw or 0)
        except ValueError:  # rate-limit keys or foreign values
            return 0

    async def admit_rate(
        self, key: str, *, member: str, limit: int, window: float, now: float
    ) -> bool:
        ttl = 2 * window if window > 0 else _NO_WINDOW_TTL_SECONDS
        ttl_ms = max(1, round(ttl / self._scale * 1000))
        admitted, _n = await self._run("rate_limit", [key], [now, window, limit, member, ttl_ms])
        return int(admitted) == 1

    async def aclose(self) -> None:
        if self._owns:
            await self._client.aclose()


def quota_url(address: str, *, processor_url: str | None = None) -> str:
    """The URL for a gate's ``address``: the processor's URL (AUTH, TLS, DB) on the same server.

    ``address`` may be a bare ``host:port`` (upstream's form) or a full ``redis://`` URL.
    """
    if "://" in address:
        return address
    if processor_url and host_port(processor_url) == address:
        return processor_url
    return f"redis://{address}"


def host_port(url: str) -> str:
    """The ``host:port`` a Redis URL points at (port 6379 when not given); for a Sentinel
    address, its sentinels (no gate names those: a gate on the broker's Redis leaves the
    address empty)."""
    address = parse_redis_address(url, field="url")
    return ",".join(f"{host}:{port}" for host, port in address.hosts) or address.path


async def open_redis_quota_store(
    address: str,
    *,
    processor_url: str | None = None,
    time_scale: float = 1.0,
    cluster: bool = False,
) -> RedisQuotaStore:
    """A store with its own connection to ``address`` (see :func:`quota_url`)."""
    client = connect_redis(
        quota_url(address, processor_url=processor_url), mode="cluster" if cluster else "standalone"
    )
    try:
        await client.ping()  # a cluster client must learn the slot map before concurrent use
    except RedisError as exc:
        await client.aclose()
        raise BrokerError(f"quota store at {address} unreachable: {exc}") from exc
    return RedisQuotaStore(
        client, keyspace=Keyspace(cluster=cluster), time_scale=time_scale, owns_client=True
    )
