"""The heartbeat over Redis: every claim renewed in one round trip, stolen ones noticed."""

from __future__ import annotations

import json

import pytest
import redis.asyncio as aioredis

from sluiceway.broker.base import BrokerOptions, claim_key
from sluiceway.broker.redis import RedisBroker, open_redis_broker
from sluiceway.clock import VirtualClock
from sluiceway.gates.base import Holdings
from sluiceway.localservices import RedisServer
from sluiceway.processor.maintenance import heartbeat_once
from sluiceway.processor.metrics import ProcessorMetrics, QueueLabels
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.specs import ProcessorSpec, QueueSpec
from sluiceway.processor.work_item import WorkItem
from sluiceway.wire import decode_envelope
from sluiceway.wire.lanes import LANES

pytestmark = [pytest.mark.redis, pytest.mark.serial]

NOW = 1_700_000_000.0
QUEUE = QueueSpec(id="hb", queue_name="hb", igw_base_url="http://gw")


def member(request_id: str) -> str:
    data = {"id": request_id, "deadline": NOW + 3600}
    return json.dumps({"internal": {}, "request_kind": "plain", "data": data})


async def hold(rt: Runtime, broker: RedisBroker, count: int) -> list[WorkItem]:
    await broker.enqueue("hb", [(member(f"r{i}"), NOW + 3600) for i in range(count)])
    items = []
    for entry in await broker.peek("hb", count):
        envelope = decode_envelope(entry.member)
        key = claim_key(envelope.id, envelope.request_token)
        claim = await broker.claim(entry, key=key, owner="o" * 16, lease_until=NOW + 30)
        assert claim is not None
        labels = QueueLabels("hb", "hb", "default")
        item = WorkItem(claim, envelope, QUEUE, LANES[5], labels, "o" * 16, 0.0, Holdings())
        rt.book.add(item)
        items.append(item)
    return items


async def evalsha_calls(raw: aioredis.Redis) -> int:
    """Script runs that did work (a first NOSCRIPT reply is followed by a load and a rerun)."""
    stats = (await raw.info("commandstats")).get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)) - int(stats.get("failed_calls", 0))


async def test_one_renew_call_for_every_claim_of_a_queue(redis_server: RedisServer) -> None:
    broker = await open_redis_broker(BrokerOptions(url=redis_server.url))
    raw = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    clock = VirtualClock(NOW)
    settings = ProcessorSpec(queues=[QUEUE], claim_lease=30.0)
    rt = Runtime(broker=broker, clock=clock, settings=settings, metrics=ProcessorMetrics())
    try:
        items = await hold(rt, broker, 20)
        await raw.hset("hb:claim-owners", items[0].claim.key, "someone-else")  # taken over
        clock.advance(10)
        await raw.config_resetstat()
        assert await heartbeat_once(rt) == 1
        assert await evalsha_calls(raw) == 1
        leases = dict(await raw.zrange("hb:claims-idx", 0, -1, withscores=True))
        assert {leases[item.claim.key] for item in items[1:]} == {NOW + 40}
        assert all(item.claim.lease_until == NOW + 40 for item in items[1:])
    finally:
        await raw.delete("hb", "hb:claimed", "hb:claim-owners", "hb:claims-idx")
        await raw.aclose()
        await broker.aclose()
