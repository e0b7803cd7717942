"""ScriptBatcher: script calls of one loop turn share a pipeline, each keeps its own reply."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from sluiceway.broker.redis_batch import ScriptBatcher
from sluiceway.localservices import RedisServer

pytestmark = pytest.mark.redis

# Pushes ARGV[2] onto KEYS[1] when KEYS[2] holds ARGV[1] (a fenced write, like ack.lua).
FENCED_PUSH = """
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('LPUSH', KEYS[1], ARGV[2])
return 1
"""


@pytest.fixture
async def client(redis_server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    c = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    yield c
    await c.aclose()


def _count_sends(client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sends: list[int] = []
    pool = client.connection_pool
    original = pool.get_connection

    async def counting(*args: object, **kwargs: object) -> object:
        sends.append(1)
        return await original(*args, **kwargs)

    monkeypatch.setattr(pool, "get_connection", counting)
    return sends


async def test_calls_of_one_turn_share_one_pipeline_and_keep_their_replies(
    client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = client.register_script(FENCED_PUSH)
    await client.set("owner", "me")
    await script(keys=["out", "owner"], args=["me", "warm-up"])  # loads the script
    batcher = ScriptBatcher(client)
    sends = _count_sends(client, monkeypatch)
    replies = await asyncio.gather(
        *(batcher.run(script, ["out", "owner"], [owner, f"r{i}"])
          for i, owner in enumerate(["me", "me", "thief", "me"]))
    )  # fmt: skip
    assert replies == [1, 1, 0, 1]
    assert len(sends) == 1
    assert await client.lrange("out", 0, -1) == ["r3", "r1", "r0", "warm-up"]
    await batcher.aclose()


async def test_a_flushed_script_cache_is_reloaded(client: aioredis.Redis) -> None:
    script = client.register_script(FENCED_PUSH)
    await client.set("owner", "me")
    await client.script_flush()
    batcher = ScriptBatcher(client)
    replies = await asyncio.gather(
        *(batcher.run(script, ["out", "owner"], ["me", f"r{i}"]) for i in range(3))
    )
    assert replies == [1, 1, 1]
    assert await client.llen("out") == 3


async def test_a_cancelled_caller_does_not_disturb_the_others(client: aioredis.Redis) -> None:
    script = client.register_script(FENCED_PUSH)
    await client.set("owner", "me")
    batcher = ScriptBatcher(client)
    first = asyncio.ensure_future(batcher.run(script, ["out", "owner"], ["me", "a"]))
    second = asyncio.ensure_future(batcher.run(script, ["out", "owner"], ["me", "b"]))
    await asyncio.sleep(0)
    first.cancel()
    assert await second == 1
    await batcher.aclose()
    assert first.cancelled()


async def test_a_broken_connection_fails_every_caller(
    client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = client.register_script(FENCED_PUSH)

    async def down(*args: object, **kwargs: object) -> object:
        raise RedisConnectionError("gone")

    monkeypatch.setattr(client.connection_pool, "get_connection", down)
    batcher = ScriptBatcher(client)
    replies = await asyncio.gather(
        *(batcher.run(script, ["out", "owner"], ["me", f"r{i}"]) for i in range(2)),
        return_exceptions=True,
    )
    assert all(isinstance(r, RedisConnectionError) for r in replies)
