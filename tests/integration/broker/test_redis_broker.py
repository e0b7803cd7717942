"""The redis-sortedset broker through the broker conformance suite, plus Redis-only behaviour."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis.asyncio as aioredis

from brokers.conformance import (
    NOW,
    QUEUE,
    RESULTS,
    BrokerConformance,
    ask,
    member,
    put,
    result_for,
    take,
    token_of,
)
from brokers.peek_order_conformance import PeekOrderConformance
from sluiceway.broker.base import ActiveMarker, Broker, BrokerOptions, ResultWrite, claim_key
from sluiceway.broker.keys import Keyspace, key_slot
from sluiceway.broker.redis import RedisBroker, connect_redis, open_redis_broker
from sluiceway.broker.wakeup import PollWaker, WakeMode
from sluiceway.localservices import RedisServer

pytestmark = pytest.mark.redis


class TestRedisBroker(BrokerConformance, PeekOrderConformance):
    @pytest.fixture
    async def broker(self, redis_server: RedisServer) -> AsyncIterator[Broker]:
        broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
        yield broker
        await broker.aclose()


async def _raw(server: RedisServer) -> aioredis.Redis:
    return aioredis.Redis.from_url(server.url, decode_responses=True)


async def test_claims_use_the_upstream_keys_and_formats(redis_server: RedisServer) -> None:
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    try:
        await put(broker, ("a", NOW + 10))
        (entry,) = await broker.peek(QUEUE, 1)
        claim = await take(broker, entry, owner="0123456789abcdef", lease=60)
        key = claim_key("a", token_of("a"))
        assert key == "a\x00" + token_of("a")
        assert await raw.hget(f"{QUEUE}:claimed", key) == entry.member
        assert await raw.hget(f"{QUEUE}:claim-owners", key) == "0123456789abcdef"
        assert await raw.zscore(f"{QUEUE}:claims-idx", key) == pytest.approx(NOW + 60, abs=1e-3)
        assert await broker.retry_after(claim, member=entry.member, due=NOW + 5)
        assert await raw.zscore("retry-sortedset", entry.member) == pytest.approx(NOW + 5, abs=1e-3)
        assert await raw.exists(f"{QUEUE}:claimed", f"{QUEUE}:claim-owners") == 0
        await broker.enqueue(QUEUE, [("{broken", NOW)])
        (bad,) = await broker.peek(QUEUE, 1)
        assert await broker.quarantine(bad)
        assert await raw.lrange(f"{QUEUE}:invalid", 0, -1) == ["{broken"]
    finally:
        await broker.aclose()
        await raw.aclose()


async def test_a_batch_claim_publishes_one_event_per_key(redis_server: RedisServer) -> None:
    """The processor listens to its queues' keyspace channels: a claimed batch of ten costs it
    one ``zrem`` message, not ten."""
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    await raw.config_set("notify-keyspace-events", "KEA")
    pubsub = raw.pubsub()
    try:
        await put(broker, *((f"b{i}", NOW + i) for i in range(11)))  # the key outlives the claim
        await pubsub.subscribe(f"__keyspace@0__:{QUEUE}")
        await pubsub.get_message(timeout=1.0)  # the subscribe confirmation
        outcomes = await broker.claim_many([ask(e) for e in await broker.peek(QUEUE, 10)])
        assert all(o.claim is not None for o in outcomes)
        events = []
        while (msg := await pubsub.get_message(timeout=0.2)) is not None:
            events.append(msg["data"])
        assert events == ["zrem"]
        assert await raw.hlen(f"{QUEUE}:claimed") == 10
        assert await raw.zcard(f"{QUEUE}:claims-idx") == 10
    finally:
        await pubsub.aclose()
        await broker.aclose()
        await raw.aclose()


async def test_a_batch_naming_an_entry_twice_claims_it_once(redis_server: RedisServer) -> None:
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    try:
        await put(broker, ("a", NOW + 1), ("b", NOW + 2))
        a, b = await broker.peek(QUEUE, 2)
        codes = await broker.claim_many([ask(a), ask(a, owner="b" * 16), ask(b)])
        assert [o.claim is not None for o in codes] == [True, False, True]
        assert codes[0].claim is not None and codes[0].claim.owner == "a" * 16
    finally:
        await broker.aclose()


async def test_a_batch_larger_than_one_write_slice_is_claimed_whole(
    redis_server: RedisServer,
) -> None:
    """The script writes in slices (Lua's stack is small); 1,200 entries take two."""
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    try:
        await put(broker, *((f"s{i}", NOW + i) for i in range(1200)))
        entries = await broker.peek(QUEUE, 1200)
        outcomes = await broker.claim_many([ask(e) for e in entries])
        assert sum(o.claim is not None for o in outcomes) == 1200
        assert await raw.zcard(QUEUE) == 0
        assert await raw.hlen(f"{QUEUE}:claim-owners") == 1200
    finally:
        await broker.aclose()
        await raw.aclose()


async def test_result_ttl_expires_the_list_in_wall_time(redis_server: RedisServer) -> None:
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    try:
        await put(broker, ("a", NOW + 10))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        write = ResultWrite("mailbox:a", '{"id": "a"}', "a", token_of("a"), expire_after=30.0)
        assert await broker.ack(claim, write)
        assert 29_000 < await raw.pttl("mailbox:a") <= 30_000
    finally:
        await broker.aclose()
        await raw.aclose()


async def test_producer_markers_and_cancel_use_the_contract_keys(redis_server: RedisServer) -> None:
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    try:
        marker = ActiveMarker("a", "1" * 32, expire_after=120)
        await broker.enqueue(QUEUE, [(member("a", token="1" * 32), NOW)], markers=[marker])
        assert await raw.get("request-active:a") == "1" * 32
        assert 119_000 < await raw.pttl("request-active:a") <= 120_000
        assert await broker.cancel("a", expire_after=7 * 24 * 3600)
        assert await raw.get("request-cancel:a") == "1" * 32
    finally:
        await broker.aclose()
        await raw.aclose()


# -- wake-ups (docs/design-rules.md rule 12) ------------------------------------------


@pytest.mark.serial
async def test_an_idle_queue_wakes_within_a_quarter_of_the_poll_interval(
    redis_server: RedisServer,
) -> None:
    poll_interval = 1.0  # poll_interval_ms 1000
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    try:
        assert broker.wake_mode is WakeMode.EVENTS
        await broker.wait_for_work([QUEUE], block_for=0.01)  # subscribe before measuring
        loop = asyncio.get_running_loop()
        waiter = asyncio.create_task(broker.wait_for_work([QUEUE], block_for=poll_interval))
        await asyncio.sleep(0.05)
        started = loop.time()
        await raw.zadd(QUEUE, {member("a"): NOW})
        assert await waiter is True
        assert loop.time() - started < poll_interval / 4
    finally:
        await broker.aclose()
        await raw.aclose()


@pytest.mark.parametrize("flags", ["Ez", "Kz", "KEA"])
async def test_event_flags_that_carry_zadd_select_events(
    redis_server: RedisServer, flags: str
) -> None:
    raw = await _raw(redis_server)
    await raw.config_set("notify-keyspace-events", flags)
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    try:
        assert broker.wake_mode is WakeMode.EVENTS
        waiter = asyncio.create_task(broker.wait_for_work([QUEUE], block_for=10.0))
        await asyncio.sleep(0.05)
        await raw.zadd(QUEUE, {member("a"): NOW})
        assert await asyncio.wait_for(waiter, 5.0) is True
    finally:
        await broker.aclose()
        await raw.aclose()


async def test_without_events_the_broker_polls(
    redis_factory: Callable[..., RedisServer],
) -> None:
    server = redis_factory(keyspace_events="")
    broker = await open_redis_broker(BrokerOptions(url=server.url))
    raw = await _raw(server)
    try:
        assert broker.wake_mode is WakeMode.POLLING
        waiter = asyncio.create_task(broker.wait_for_work([QUEUE], block_for=0.3))
        await asyncio.sleep(0.05)
        await raw.zadd(QUEUE, {member("a"): NOW})  # another process: only polling finds it
        assert await waiter is False
    finally:
        await broker.aclose()
        await raw.aclose()


# -- cluster key layout (hash tags) on a standalone server ----------------------------------


class TestRedisBrokerClusterKeys(BrokerConformance, PeekOrderConformance):
    """The cluster code paths (hash-tagged keys, cross-slot acks, no MULTI) pass the suite."""

    @pytest.fixture
    async def broker(self, redis_server: RedisServer) -> AsyncIterator[Broker]:
        client = connect_redis(redis_server.url)
        broker = RedisBroker(client, keyspace=Keyspace(cluster=True), waker=PollWaker())
        yield broker
        await broker.aclose()


async def test_cluster_keys_share_the_queue_slot(redis_server: RedisServer) -> None:
    keys = Keyspace(cluster=True).queue(QUEUE)
    assert keys.claimed == "{team-batch}:claimed"
    assert keys.retry == "{team-batch}:retry-sortedset"
    assert len({key_slot(k) for k in (keys.pending, *keys.claim_keys, keys.retry)}) == 1


async def test_a_crash_between_push_and_drop_in_cluster_mode_duplicates_with_one_token(
    redis_server: RedisServer,
) -> None:
    """Cross-slot acks are at-least-once (design rule 13); the token identifies duplicates."""
    broker = RedisBroker(
        connect_redis(redis_server.url), keyspace=Keyspace(cluster=True), waker=PollWaker()
    )

    async def crash(step: str) -> None:
        if step == "ack:pushed":
            raise ConnectionError(f"crash at {step}")

    try:
        await put(broker, ("a", NOW + 10))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0], lease=5)
        broker.fault_hook = crash
        with pytest.raises(ConnectionError):
            await broker.ack(claim, result_for("a"))
        broker.fault_hook = None
        assert await broker.reclaim_expired(QUEUE, NOW + 6, 10) == 1
        again = await take(broker, (await broker.peek(QUEUE, 1))[0], owner="b" * 16)
        assert await broker.ack(again, result_for("a"))
        assert await broker.result_count(RESULTS) == 2
    finally:
        await broker.aclose()


# -- cancellation checks answered from keyspace events --------------------------------------


async def test_repeated_cancel_checks_read_redis_once_until_a_marker_is_written(
    redis_server: RedisServer,
) -> None:
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    try:
        assert isinstance(broker, RedisBroker)
        marker = ActiveMarker("a", "1" * 32, expire_after=600)
        await broker.enqueue(QUEUE, [(member("a", token="1" * 32), NOW)], markers=[marker])
        await _until(lambda: broker.cancel_checks_cached)
        await raw.config_resetstat()
        for _ in range(5):
            assert not await broker.is_cancelled("a", "1" * 32)
        assert (await raw.info("commandstats"))["cmdstat_get"]["calls"] == 1
        assert await broker.cancel("a", expire_after=60)
        await _until_true(lambda: broker.is_cancelled("a", "1" * 32))
    finally:
        await broker.aclose()
        await raw.aclose()


async def test_without_string_events_every_check_reads_redis(
    redis_factory: Callable[..., RedisServer],
) -> None:
    server = redis_factory(keyspace_events="Kz")
    broker = await open_redis_broker(BrokerOptions(url=server.url))
    raw = await _raw(server)
    try:
        assert isinstance(broker, RedisBroker) and not broker.cancel_checks_cached
        for _ in range(3):
            assert not await broker.is_cancelled("a", "1" * 32)
        assert (await raw.info("commandstats"))["cmdstat_get"]["calls"] == 3
    finally:
        await broker.aclose()
        await raw.aclose()


async def _until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not predicate():  # noqa: ASYNC110 - the subscription confirmation has no event
            await asyncio.sleep(0.005)


async def _until_true(check: Callable[[], Awaitable[bool]]) -> None:
    async with asyncio.timeout(5):
        while not await check():  # noqa: ASYNC110 - the event reaches us asynchronously
            await asyncio.sleep(0.005)


async def test_a_killed_event_connection_is_rebuilt_and_the_cache_rearmed(
    redis_server: RedisServer,
) -> None:
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    try:
        assert isinstance(broker, RedisBroker)
        await broker.wait_for_work([QUEUE], block_for=0.01)
        await _until(lambda: broker.cancel_checks_cached)
        await raw.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        await _until(lambda: not broker.cancel_checks_cached)
        waiter = asyncio.create_task(broker.wait_for_work([QUEUE], block_for=10.0))
        await _until(lambda: broker.cancel_checks_cached)
        await raw.zadd(QUEUE, {member("a"): NOW})
        assert await asyncio.wait_for(waiter, 5.0) is True
    finally:
        await broker.aclose()
        await raw.aclose()


async def test_moving_a_burst_of_retries_does_not_open_a_connection_each(
    redis_server: RedisServer,
) -> None:
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = await _raw(redis_server)
    try:
        count = 200
        retries = {member(f"r{i}", deadline=NOW + 600 + i): NOW for i in range(count)}
        await raw.zadd("retry-sortedset", retries)
        before = len(await raw.client_list())
        assert await broker.move_due_retries(NOW + 1, 1000, fallback_queue="x") == count
        assert await broker.backlog(QUEUE) == count
        assert len(await raw.client_list()) - before < 10
    finally:
        await broker.aclose()
        await raw.aclose()


@pytest.mark.parametrize("flags", ["Kl", "KEA"])
async def test_result_waiters_wake_on_list_events_with_one_subscription(
    redis_server: RedisServer, flags: str
) -> None:
    raw = await _raw(redis_server)
    await raw.config_set("notify-keyspace-events", flags)
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    assert isinstance(broker, RedisBroker)
    try:
        assert broker.result_wake_mode is WakeMode.EVENTS
        keys = [f"results:req:t1:{i}" for i in range(20)]
        waiters = [asyncio.create_task(broker.wait_for_result(k, 30.0)) for k in keys]
        await asyncio.sleep(0.1)
        clients = await raw.client_list(_type="pubsub")
        assert len(clients) == 1  # one shared subscriber for every waiter of the family
        await raw.lpush(keys[3], '{"id": "3"}')  # another process pushes
        assert await asyncio.wait_for(waiters[3], 5.0) is True
        assert not any(w.done() for i, w in enumerate(waiters) if i != 3)
        for w in waiters:
            w.cancel()
    finally:
        await broker.aclose()
        await raw.config_set("notify-keyspace-events", "")
        await raw.aclose()


async def test_result_waits_without_events_fall_back_to_the_callers_poll(
    redis_factory: Callable[..., RedisServer],
) -> None:
    server = redis_factory(keyspace_events="")
    broker = await open_redis_broker(BrokerOptions(url=server.url))
    assert isinstance(broker, RedisBroker)
    try:
        assert broker.result_wake_mode is WakeMode.POLLING
        assert await broker.wait_for_result("results:req:t:x", 0.05) is False
    finally:
        await broker.aclose()
