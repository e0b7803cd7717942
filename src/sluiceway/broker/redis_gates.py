"""Redis for the Redis-backed gates: the ``redis`` budget key and the ``redis-leased-rate``
bucket, one client per distinct address (a bare ``host:port`` on the processor's own server
takes the processor's URL, so AUTH, TLS and DB carry over)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redis.exceptions import RedisError

from sluiceway.broker import lua
from sluiceway.broker.keys import Keyspace, LeasedRateKeys
from sluiceway.broker.quota_redis import quota_url
from sluiceway.broker.redis_connect import AnyRedis, connect_redis
from sluiceway.errors import BrokerError
from sluiceway.signals.base import Reading, Sample

__all__ = ["LEASE_API_VERSION", "BudgetKeySource", "RedisGateClients", "RedisLeasedRate"]

LEASE_API_VERSION = "llm-d.ai/v1alpha1"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class BudgetKeySource:
    """``GET key`` as a budget: missing or unparsable reads 1.0 (open), as upstream; a Redis
    error is an error reading (the gate's fallback, 0 by default)."""

    def __init__(self, client: AnyRedis, key: str, *, address: str) -> None:
        self._client = client
        self._key = key
        self._address = address

    @property
    def key(self) -> str:
        return f"redis-budget {self._address} {self._key}"

    async def read(self) -> Reading:
        try:
            raw = await self._client.get(self._key)
        except RedisError as exc:
            return Reading(error=f"redis {self._address}: {exc}")
        if raw is None:
            return Reading((Sample(1.0, {"state": "missing"}),))
        try:
            return Reading((Sample(float(_text(raw))),))
        except ValueError:
            return Reading((Sample(1.0, {"state": "unparsable"}),))

    async def aclose(self) -> None:
        return None


class RedisLeasedRate:
    """The leased token bucket of one pool, in two hashes changed by one Lua script."""

    def __init__(
        self, client: AnyRedis, keys: LeasedRateKeys, *, pool_id: str, burst: float, address: str
    ) -> None:
        self._client = client
        self._keys = keys
        self._pool = pool_id
        self._burst = burst
        self._address = address
        self._script = client.register_script(lua.source("leased_rate"))

    @property
    def key(self) -> str:
        return f"leased-rate {self._address} {self._keys.control} {self._pool}"

    async def control(self) -> Mapping[str, str]:
        try:
            raw = await self._client.hgetall(self._keys.control)
        except RedisError as exc:
            raise BrokerError(f"redis {self._address}: {exc}") from exc
        return {_text(k): _text(v) for k, v in raw.items()}

    async def take(self, now_ms: int) -> tuple[bool, str]:
        args: list[str | int] = [now_ms, self._pool, repr(self._burst), LEASE_API_VERSION]
        try:
            taken, reason = await self._script(
                keys=[self._keys.control, self._keys.state], args=args
            )
        except RedisError as exc:
            raise BrokerError(f"redis {self._address}: {exc}") from exc
        return int(taken) == 1, _text(reason)


class RedisGateClients:
    """Implements the gates' ``RedisGateBackend``; closes the clients it opened."""

    def __init__(self, *, processor_url: str | None = None, keyspace: Keyspace | None = None):
        self._processor_url = processor_url
        self._keys = keyspace or Keyspace()
        self._clients: dict[str, AnyRedis] = {}

    def _client(self, address: str) -> AnyRedis:
        client = self._clients.get(address)
        if client is None:
            url = quota_url(address, processor_url=self._processor_url)
            client = self._clients[address] = connect_redis(url)
        return client

    def budget_key(self, address: str, key: str) -> BudgetKeySource:
        return BudgetKeySource(self._client(address), self._keys.budget_key(key), address=address)

    def leased_rate(
        self, address: str, *, control_key: str, state_key: str, pool_id: str, burst: float
    ) -> RedisLeasedRate:
        keys = self._keys.leased_rate(control_key, state_key)
        return RedisLeasedRate(
            self._client(address), keys, pool_id=pool_id, burst=burst, address=address
        )

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
