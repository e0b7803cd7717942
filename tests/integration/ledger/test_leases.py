"""The router's lease client on a real Redis: one call for a burst, grants in order within the
pool, a local share while Redis is away, the ledger rebuilt when it is back."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from restartable_redis import RestartableRedis, restartable_redis
from sluiceway.clock import RealClock
from sluiceway.ledger.leases import LeaseLedger, LedgerSettings
from sluiceway.ledger.replicas import ReplicaSet
from sluiceway.localservices import RedisServer

pytestmark = [pytest.mark.redis]

# no spare leases (counted as held, they would blur the counts), but where a test says so
SETTINGS = LedgerSettings("redis://unused", lease=1.0, retry=0.02, spare=0)


def ledger(redis: aioredis.Redis, member: str, cap: int = 10, spare: int = 0) -> LeaseLedger:
    settings = dataclasses.replace(SETTINGS, spare=spare)
    led = LeaseLedger(ReplicaSet(redis, "router/t"), member, RealClock(), settings)
    led.cap = cap
    return led


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()


async def test_a_burst_of_acquires_goes_in_one_call(redis: aioredis.Redis) -> None:
    led = ledger(redis, "a", spare=2)
    leases = [led.acquire() for _ in range(8)]
    led.start()
    other = ledger(redis, "b")
    try:
        await asyncio.wait_for(asyncio.gather(*leases), 5)
        assert led.held == 8
        assert led.calls == 1
        for _ in range(8):
            led.release()
        await asyncio.sleep(0.1)
        # nobody holds demand back: two stay granted as spares, the rest wait for the next call
        assert led.calls == 1
        assert (await ReplicaSet(redis, "router/t").members())[0].held == 8
        assert led.spare == 2  # two kept granted for the next requests, without a call
        taken = led.acquire()
        assert taken.done() and led.calls == 1 and led.spare == 1
        led.release()
        other.hold_back(True)
        await other.sync_once()  # b is held back now: a is told and gives everything back
        await _until(lambda: led.calls >= 2 and led.spare == 0, within=1.0)

        async def held_by_a() -> int:
            rows = {r.member: r.held for r in await ReplicaSet(redis, "router/t").members()}
            return rows["a"]

        end = asyncio.get_running_loop().time() + 1.0
        while await held_by_a() != 0:
            assert asyncio.get_running_loop().time() < end
            await asyncio.sleep(0.01)
    finally:
        await led.close()
        await other.close()


async def test_requests_beyond_the_pool_wait_for_room_in_order(redis: aioredis.Redis) -> None:
    a, b = ledger(redis, "a"), ledger(redis, "b")
    a.start()
    b.start()
    try:
        first = [a.acquire() for _ in range(7)]
        await asyncio.wait_for(asyncio.gather(*first), 5)
        second = [b.acquire() for _ in range(5)]
        await asyncio.sleep(0.2)
        assert [f.done() for f in second] == [True] * 3 + [False] * 2
        assert b.waiting == 2
        a.release()
        await asyncio.wait_for(second[3], 5)
        assert not second[4].done()
        second[4].cancel()  # the client left: its place is given up
        a.release()
        await asyncio.sleep(0.2)
        assert b.held == 4 and b.waiting == 0
    finally:
        await a.close()
        await b.close()


async def test_a_held_back_replica_learns_of_freed_room_at_once(redis: aioredis.Redis) -> None:
    changes: list[int] = []
    a = ledger(redis, "a")
    b = LeaseLedger(
        ReplicaSet(redis, "router/t"),
        "b",
        RealClock(),
        LedgerSettings("redis://unused", lease=30.0),  # renewals every 10 s: not the cause
        on_change=lambda: changes.append(b.view.others),
    )
    a.start()
    b.start()
    try:
        await asyncio.wait_for(asyncio.gather(*[a.acquire() for _ in range(10)]), 5)
        await asyncio.sleep(0.1)
        b.hold_back(True)
        await _until(lambda: b.view.others == 10)
        a.release()
        await _until(lambda: b.view.others == 9, within=1.0)
        assert changes[-1] == 9
    finally:
        await a.close()
        await b.close()


async def test_away_from_redis_a_local_share_then_the_ledger_is_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with restartable_redis(tmp_path) as server:
        client = aioredis.Redis.from_url(server.url, decode_responses=True)
        a, b = ledger(client, "a"), ledger(client, "b")
        a.start()
        b.start()
        try:
            await asyncio.wait_for(asyncio.gather(*[a.acquire() for _ in range(3)]), 5)
            await asyncio.wait_for(b.acquire(), 5)
            await _until(lambda: a.view.live == 2 and a.view.others == 1)
            with caplog.at_level(logging.INFO, logger="sluiceway.ledger.leases"):
                await _outage(server, a, b)
            lost = [r for r in caplog.records if "unreachable" in r.getMessage()]
            back = [r for r in caplog.records if "reachable again" in r.getMessage()]
            assert len(lost) == 2 and len(back) == 2  # one line each way per replica
            members = {r.member: r.held for r in await ReplicaSet(client, "router/t").members()}
            assert members == {"a": 4, "b": 1}  # rebuilt from what each holds
            assert a.unreachable == 1
        finally:
            await a.close()
            await b.close()
            await client.aclose()


async def _outage(server: RestartableRedis, a: LeaseLedger, b: LeaseLedger) -> None:
    await asyncio.to_thread(server.stop)
    await _until(lambda: not a.view.connected and not b.view.connected)
    # granted at once: the router's view holds it to its share
    await asyncio.wait_for(a.acquire(), 1)
    assert a.held == 4
    assert a.view.others_for(own=4, now=RealClock().now()) == 4
    await asyncio.to_thread(server.start)  # an empty Redis
    await _until(lambda: a.view.connected and b.view.connected, within=5)


async def _until(check: object, within: float = 3.0) -> None:
    assert callable(check)
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not check():
        assert loop.time() < end, "condition not reached"
        await asyncio.sleep(0.01)
