"""The Redis side of the Redis-backed gates on a real redis-server: the budget key's reading
rules and the leased token bucket's script (validation, refill, pause, expiry, shared state)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from sluiceway.broker.redis_gates import LEASE_API_VERSION, RedisGateClients
from sluiceway.clock import RealClock
from sluiceway.gates.base import GateRequest, Holdings, Verdict
from sluiceway.gates.context import REDIS_GATES_SERVICE, SIGNALS_SERVICE, GateContext
from sluiceway.gates.factory import build_gate
from sluiceway.localservices import RedisServer
from sluiceway.signals.refresher import SignalHub

pytestmark = pytest.mark.redis

T0 = 1_700_000_000_000  # wall milliseconds the tests pass as "now"


@pytest.fixture
async def clients(redis_server: RedisServer) -> AsyncIterator[RedisGateClients]:
    backend = RedisGateClients()
    yield backend
    await backend.aclose()


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis(host=redis_server.host, port=redis_server.port)
    yield client
    await client.aclose()


async def test_budget_key_reading_rules(
    clients: RedisGateClients, raw: aioredis.Redis, redis_server: RedisServer
) -> None:
    address = f"{redis_server.host}:{redis_server.port}"
    source = clients.budget_key(address, "dispatch-gate-budget")
    assert (await source.read()).value == 1.0  # missing: open, as upstream
    await raw.set("dispatch-gate-budget", "0.25")
    assert (await source.read()).value == 0.25
    await raw.set("dispatch-gate-budget", "lots")
    assert (await source.read()).value == 1.0
    down = RedisGateClients().budget_key("127.0.0.1:9", "k")
    assert (await down.read()).error


async def _lease(raw: aioredis.Redis, **changes: object) -> None:
    fields: dict[str, object] = {
        "api_version": LEASE_API_VERSION,
        "pool_id": "teams",
        "max_admission_rps": 2,
        "valid_until_unix_ms": T0 + 60_000,
        "decision_id": "d-1",
    }
    fields.update(changes)
    await raw.hset("rate:teams", mapping=fields)  # type: ignore[arg-type]


async def test_bucket_refills_at_the_leased_rate(
    clients: RedisGateClients, raw: aioredis.Redis, redis_server: RedisServer
) -> None:
    address = f"{redis_server.host}:{redis_server.port}"
    bucket = clients.leased_rate(
        address, control_key="rate:teams", state_key="", pool_id="teams", burst=1.5
    )
    assert await bucket.take(T0) == (False, "api_version")  # no lease: closed
    await _lease(raw)
    takes = [await bucket.take(T0) for _ in range(4)]  # capacity max(1, 2 x 1.5) = 3
    assert [t for t, _ in takes] == [True, True, True, False] and takes[3][1] == "empty"
    assert await bucket.take(T0 + 499) == (False, "empty")
    assert await bucket.take(T0 + 500) == (True, "ok")  # 2 rps: one token per 500 ms
    ttl = await raw.pttl("rate:teams:state")
    assert 60_000 < ttl <= 61_000  # the state outlives the lease by a second
    other = clients.leased_rate(
        address, control_key="rate:teams", state_key="", pool_id="teams", burst=1.5
    )
    assert await other.take(T0 + 500) == (False, "empty")  # one bucket for every replica


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"pool_id": "other"}, "pool_id"),
        ({"max_admission_rps": 0}, "paused"),
        ({"max_admission_rps": -1}, "max_admission_rps"),
        ({"max_admission_rps": "nan"}, "max_admission_rps"),
        ({"valid_until_unix_ms": T0}, "expired"),
        ({"decision_id": ""}, "decision_id"),
    ],
)
async def test_invalid_leases_admit_nothing(
    clients: RedisGateClients,
    raw: aioredis.Redis,
    redis_server: RedisServer,
    changes: dict[str, object],
    reason: str,
) -> None:
    bucket = clients.leased_rate(
        f"{redis_server.host}:{redis_server.port}",
        control_key="rate:teams",
        state_key="",
        pool_id="teams",
        burst=1.0,
    )
    await _lease(raw, **changes)
    assert await bucket.take(T0) == (False, reason)


async def test_gate_over_real_redis_fails_closed_when_redis_is_gone(
    raw: aioredis.Redis, redis_server: RedisServer
) -> None:
    clock = RealClock()
    hub, backend = SignalHub(clock), RedisGateClients()
    ctx = GateContext(
        clock=clock,
        services={SIGNALS_SERVICE: hub, REDIS_GATES_SERVICE: backend},
        labels={"pool_name": "teams"},
    )
    await _lease(raw, valid_until_unix_ms=2**53)
    params = {"address": f"{redis_server.host}:{redis_server.port}", "control_key": "rate:teams"}
    gate = build_gate("redis-leased-rate", params, ctx)
    assert gate is not None and await gate.budget(clock.now()) == 1.0
    first = await gate.apply(_request(), Holdings(), clock.now())
    assert first.verdict is Verdict.CONTINUE
    dead = {"address": "127.0.0.1:9", "control_key": "rate:teams"}
    closed = build_gate("redis-leased-rate", dead, ctx)
    assert closed is not None
    assert (await closed.apply(_request(), Holdings(), clock.now())).verdict is Verdict.REFUSE
    assert await closed.budget(clock.now()) == 0.0
    await gate.aclose()
    await closed.aclose()
    await hub.aclose()
    await backend.aclose()


def _request() -> GateRequest:
    return GateRequest("r", "t", "h", 2e9, 2e9)
