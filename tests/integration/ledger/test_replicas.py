"""The replica set script on a real Redis: grants within the cap, absolute counts, expiry of a
silent member, the freed-room channel, listing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from sluiceway.ledger.fair_share import BandDemand
from sluiceway.ledger.replicas import EvictionOrder, ReplicaSet, group_keys
from sluiceway.localservices import RedisServer

pytestmark = [pytest.mark.redis]


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    await client.aclose()


async def test_grants_stop_at_the_cap_across_members(redis: aioredis.Redis) -> None:
    pool = ReplicaSet(redis, "router/p")
    a = await pool.sync("a", 0, want=7, cap=10, ttl=5)
    b = await pool.sync("b", 0, want=7, cap=10, ttl=5)
    assert (a.granted, a.others, a.live) == (7, 0, 1)
    assert (b.granted, b.others, b.live) == (3, 7, 2)
    # a releases 4 (states 3): b may now take them, never more
    await pool.sync("a", 3, cap=10, ttl=5)
    again = await pool.sync("b", 3, want=9, cap=10, ttl=5)
    assert (again.granted, again.others) == (4, 3)
    held = await redis.hgetall(group_keys("router/p")[1])
    assert {k: int(v) for k, v in held.items()} == {"a": 3, "b": 7}


async def test_a_stated_count_replaces_the_old_one(redis: aioredis.Redis) -> None:
    pool = ReplicaSet(redis, "router/p")
    await pool.sync("a", 0, want=5, cap=10, ttl=5)
    # repeated or late calls cannot drift the count: the member says what it holds
    for _ in range(3):
        await pool.sync("a", 2, ttl=5)
    result = await pool.sync("b", 0, want=10, cap=10, ttl=5)
    assert result.granted == 8


async def test_a_silent_member_is_forgotten_after_its_ttl(redis: aioredis.Redis) -> None:
    pool = ReplicaSet(redis, "router/p")
    await pool.sync("dead", 0, want=10, cap=10, ttl=0.2)
    assert (await pool.sync("b", 0, want=1, cap=10, ttl=5)).granted == 0
    await asyncio.sleep(0.3)  # the ttl is on the Redis server's clock
    result = await pool.sync("b", 0, want=10, cap=10, ttl=5)
    assert (result.granted, result.others, result.live) == (10, 0, 1)
    assert [r.member for r in await pool.members()] == ["b"]


async def test_freed_room_is_told_to_held_back_members(redis: aioredis.Redis) -> None:
    pool = ReplicaSet(redis, "router/p")
    pubsub = redis.pubsub()
    await pubsub.subscribe(pool.channel)
    await pubsub.get_message(timeout=1)  # the subscribe confirmation
    await pool.sync("a", 0, want=10, cap=10, ttl=5)
    await pool.sync("b", 0, want=1, cap=10, ttl=5, blocked=True)
    held_back = await pubsub.get_message(timeout=1)
    assert held_back is not None and held_back["data"] == "blocked:b"  # said once
    await pool.sync("b", 0, want=1, cap=10, ttl=5, blocked=True)
    await pool.sync("a", 10, ttl=5)  # nothing freed: no message
    assert await pubsub.get_message(timeout=0.2) is None
    await pool.sync("a", 9, ttl=5)
    message = await pubsub.get_message(timeout=1)
    assert message is not None and message["data"] == "a"
    await pool.sync("b", 0, ttl=5)  # no longer held back: frees tell nobody
    await pool.sync("a", 5, ttl=5)
    assert await pubsub.get_message(timeout=0.2) is None
    await pubsub.aclose()


async def test_members_lists_the_live_ones_with_their_info(redis: aioredis.Redis) -> None:
    pool = ReplicaSet(redis, "router/p")
    await pool.sync("a", 0, want=2, cap=10, ttl=5, info={"role": "router", "pid": 1})
    await pool.sync("b", 1, ttl=5)
    rows = await pool.members()
    assert [(r.member, r.held) for r in rows] == [("a", 2), ("b", 1)]
    assert rows[0].info == {"role": "router", "pid": 1}
    assert 4 < rows[0].expires_in <= 5
    await pool.leave("a")
    assert [r.member for r in await pool.members()] == ["b"]


async def test_room_waited_for_in_a_higher_band_goes_to_no_lower_one(
    redis: aioredis.Redis,
) -> None:
    pool = ReplicaSet(redis, "router/p")
    await pool.sync("a", 0, want={-10: 6}, cap=10, ttl=5)
    # b waits for 3 in band 100 (not granted yet: it asks for none), a asks for 4 more in -10
    seen = await pool.sync("b", 0, cap=10, ttl=5, waiting={100: 3})
    assert seen.others == 6
    more = await pool.sync("a", 6, want={-10: 4, 30: 2}, cap=10, ttl=5, waiting={-10: 4, 30: 2})
    # 4 free, 3 of them kept for band 100: band 30 gets 1, band -10 none
    assert more.by_band == {30: 1, -10: 0}
    assert more.waiting == {100: 3}
    got = await pool.sync("b", 0, want={100: 3}, cap=10, ttl=5, waiting={100: 3})
    assert (got.granted, got.by_band) == (3, {100: 3})
    # band 100 served and done: the room goes to the lower bands, higher first
    await pool.sync("b", 0, ttl=5)
    rest = await pool.sync("a", 7, want={-10: 4, 30: 1}, cap=10, ttl=5)
    assert rest.by_band == {30: 1, -10: 2}


async def test_eviction_orders_reach_their_member_once(redis: aioredis.Redis) -> None:
    pool = ReplicaSet(redis, "router/p")
    await pool.sync("a", 0, want={-10: 4, -5: 2}, cap=10, ttl=5, bands={-10: 4, -5: 2})
    seen = await pool.sync("b", 0, ttl=5)
    assert sorted((v.member, v.band, v.count) for v in seen.victims) == [
        ("a", -10, 4),
        ("a", -5, 2),
    ]
    pubsub = redis.pubsub()
    await pubsub.subscribe(pool.channel)
    await pubsub.get_message(timeout=1)
    await pool.sync("b", 0, ttl=5, orders=[EvictionOrder("a", 100, 2)])
    await pool.sync("b", 0, ttl=5, orders=[EvictionOrder("a", 60, 1)])  # merged: 3 below 100
    told = await pubsub.get_message(timeout=1)
    assert told is not None and told["data"] == "evict:a"
    first = await pool.sync("a", 6, ttl=5, bands={-10: 4, -5: 2})
    assert first.order == EvictionOrder("a", 100, 3)
    again = await pool.sync("a", 3, ttl=5, bands={-10: 1, -5: 2})
    assert again.order is None
    await pubsub.aclose()


async def test_members_see_each_others_band_demand_and_not_their_own(
    redis: aioredis.Redis,
) -> None:
    pool = ReplicaSet(redis, "router/p")
    a_demand = BandDemand(30, 6.0, 4, ("aaaa0001",))
    await pool.sync("a", 6, cap=10, ttl=5, demands=[a_demand, BandDemand(0, 0.0, 0, ())])
    b = await pool.sync("b", 2, cap=10, ttl=5, demands=[BandDemand(30, 2.0, 3, ("bbbb0002",))])
    assert b.demands == (a_demand,)  # a band with nothing waiting is not stated
    a = await pool.sync("a", 6, cap=10, ttl=5, demands=[a_demand])
    assert a.demands == (BandDemand(30, 2.0, 3, ("bbbb0002",)),)
    await pool.leave("b")  # gone with its member
    assert (await pool.sync("a", 6, cap=10, ttl=5, demands=[a_demand])).demands == ()
