"""A mixed fleet: claims another kind of consumer holds on our queues are named at start."""

from __future__ import annotations

import logging

import pytest
import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.redis import open_redis_broker
from sluiceway.clock import VirtualClock
from sluiceway.localservices import RedisServer
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.processor.work_item import new_owner

pytestmark = [pytest.mark.redis, pytest.mark.serial]


def spec(*names: str) -> ProcessorSpec:
    queues = [QueueSpec(id=n, queue_name=n, igw_base_url="http://127.0.0.1:9") for n in names]
    return ProcessorSpec(queues=queues, pools=(PoolSpec("default", 1),), backlog_interval=0)


async def test_foreign_claims_are_named_at_start(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    raw = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    await raw.hset("mf-old:claim-owners", mapping={"r1\x00t": "0123456789abcdef"})
    await raw.hset("mf-ours:claim-owners", mapping={"r2\x00t": new_owner()})
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    try:
        with caplog.at_level(logging.WARNING, logger="sluiceway.processor.mixed_fleet"):
            async with Processor(
                spec("mf-old", "mf-ours"),
                broker,
                clock=VirtualClock(),
                registry=CollectorRegistry(),
            ):
                pass
    finally:
        await broker.aclose()
        await raw.delete("mf-old:claim-owners", "mf-ours:claim-owners")
        await raw.aclose()
    (warning,) = [r.getMessage() for r in caplog.records if "not sluiceway" in r.getMessage()]
    assert "mf-old (1)" in warning and "mf-ours" not in warning
