"""The coordinator on Redis (notify and poll wake-ups, a restart under held waits), SQLite and
PostgreSQL, with a processor draining."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import openai
import pytest
import redis.asyncio as aioredis
from coordinator_rig import running_front

from managed_redis import make_certs, start_sentinels
from restartable_redis import restartable_redis
from sluiceway.broker import open_broker
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.broker.redis import RedisBroker
from sluiceway.broker.wakeup import WakeMode
from sluiceway.config.coordinator import load_coordinator_config
from sluiceway.gates.quota_store import QuotaStore
from sluiceway.localservices import RedisServer
from sluiceway.sim import SimConfig

MODEL = "sim-model"


@contextlib.asynccontextmanager
async def backend(transport: str, url: str) -> AsyncIterator[tuple[Broker, QuotaStore]]:
    options = BrokerOptions(url=url)
    broker = await open_broker(transport, options)
    stores = await open_quota_stores(transport, broker, options)
    try:
        yield broker, stores("")
    finally:
        await stores.aclose()
        await broker.aclose()


async def wait_for_answers(url: str, tenant: str, count: int) -> list[int]:
    headers = {"x-llm-d-tenant": tenant, "x-llm-d-async-mode": "wait"}
    tokens = []
    async with openai.AsyncOpenAI(
        base_url=f"{url}/v1", api_key="-", max_retries=0, default_headers=headers
    ) as waiting:
        for i in range(count):
            reply = await waiting.completions.create(model=MODEL, prompt=f"p{i}", max_tokens=2)
            assert reply.usage is not None
            tokens.append(reply.usage.completion_tokens)
    return tokens


@pytest.mark.redis
async def test_on_redis_with_keyspace_events_held_connections_are_woken(
    redis_server: RedisServer,
) -> None:
    async with backend("redis-sortedset", redis_server.url) as (broker, store):
        assert isinstance(broker, RedisBroker)
        assert broker.result_wake_mode is WakeMode.EVENTS
        async with running_front(broker=broker, quota_store=store, wakeup_mode="notify") as front:
            assert await wait_for_answers(front.url, "premium", 3) == [2, 2, 2]
            raw = aioredis.Redis.from_url(redis_server.url)
            try:
                # one subscriber connection serves every held connection
                assert len(await raw.client_list(_type="pubsub")) == 1
                assert await raw.get("quota:team:premium") in (b"0", None)
            finally:
                await raw.aclose()


@pytest.mark.redis
async def test_notify_without_events_fails_at_start_and_auto_polls(
    redis_factory: Callable[..., RedisServer],
) -> None:
    from sluiceway.errors import ConfigError

    server = redis_factory(keyspace_events="")
    async with backend("redis-sortedset", server.url) as (broker, store):
        with pytest.raises(ConfigError) as err:
            async with running_front(broker=broker, quota_store=store, wakeup_mode="notify"):
                pass
        assert err.value.field == "wakeup_mode"
        async with running_front(broker=broker, quota_store=store, wakeup_mode="auto") as front:
            assert await wait_for_answers(front.url, "standard", 2) == [2, 2]


async def test_on_sqlite(tmp_path: Path) -> None:
    async with (
        backend("sqlite", str(tmp_path / "q.db")) as (broker, store),
        running_front(broker=broker, quota_store=store) as front,
    ):
        assert await wait_for_answers(front.url, "batch", 2) == [2, 2]


async def test_on_postgres_woken_by_notify(postgres_dsn: str) -> None:
    async with (
        backend("postgres", postgres_dsn) as (broker, store),
        running_front(broker=broker, quota_store=store, wakeup_mode="notify") as front,
    ):
        assert await wait_for_answers(front.url, "premium", 2) == [2, 2]


@pytest.mark.redis
@pytest.mark.serial
async def test_held_waits_ride_out_a_redis_restart_with_one_lost_and_one_back_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    slow = SimConfig(max_num_seqs=4, time_to_first_token=1.0, inter_token_latency=0.05)
    headers = {"x-llm-d-tenant": "premium", "x-llm-d-async-mode": "wait"}
    body = {"model": MODEL, "prompt": "p", "max_tokens": 2}
    with restartable_redis(tmp_path) as server:
        async with (
            backend("redis-sortedset", server.url) as (broker, store),
            running_front(
                broker=broker, quota_store=store, sim_config=slow, wakeup_mode="poll"
            ) as front,
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as client,
        ):

            async def wait() -> int:
                url = f"{front.url}/v1/completions"
                async with client.post(url, json=body, headers=headers) as reply:
                    return reply.status

            waits = [asyncio.create_task(wait()) for _ in range(20)]
            end = time.monotonic() + 60
            while front.coordinator.metrics.waiting._value.get() < 20:  # all 20 held
                assert time.monotonic() < end, "the waits were never held"
                await asyncio.sleep(0.02)
            await asyncio.to_thread(server.restart)
            statuses = await asyncio.gather(*waits)
    assert statuses == [200] * 20
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("broker lost" in m for m in loud) <= 1, loud
    assert sum("broker is back" in m for m in loud) <= 1, loud


@pytest.mark.redis
@pytest.mark.serial
@pytest.mark.parametrize("kind", ["mutual-tls", "sentinel"])
async def test_on_a_managed_redis_the_coordinator_holds_waits_to_their_answers(
    kind: str, redis_factory: Callable[..., RedisServer], tmp_path: Path
) -> None:
    if kind == "mutual-tls":
        certs = make_certs(tmp_path)
        server = redis_factory(
            keyspace_events="KEA", tls=True, args=certs.server_args(clients=True)
        )
        url = f"{server.url}?{certs.query(client=True)}"
    else:
        master = redis_factory(keyspace_events="KEA", args=["--requirepass", "m-pw"])
        found = start_sentinels(redis_factory, master, master_password="m-pw")
        url = found.url(userinfo=":m-pw@")
    params = load_coordinator_config({"redis_url": url}).value.broker  # the file's check
    assert params.redis_url == url
    async with backend("redis-sortedset", url) as (broker, store):
        assert isinstance(broker, RedisBroker) and broker.result_wake_mode is WakeMode.EVENTS
        async with running_front(broker=broker, quota_store=store, wakeup_mode="notify") as front:
            assert await wait_for_answers(front.url, "premium", 3) == [2, 2, 2]
