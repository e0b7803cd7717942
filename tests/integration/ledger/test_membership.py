"""Processors in their pools' replica sets on a real Redis: each sees the others alive and
takes its share; a clean stop leaves at once; without Redis the last share stays. Two
processors on one queue each hold half of one processor's in-flight target."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import pytest
import redis.asyncio as aioredis

from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.gates.pool_share import PoolShare
from sluiceway.ledger.membership import ReplicaMembership, share_among
from sluiceway.ledger.replicas import ReplicaSet
from sluiceway.localservices import RedisServer
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.sim import SimConfig, running_simulator

pytestmark = [pytest.mark.redis]

CLOCK = RealClock(scale=10.0)  # lease 3 scaled s = 0.3 wall s, heartbeat every 0.1 wall s


@asynccontextmanager
async def client(server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    redis = aioredis.Redis.from_url(server.url, decode_responses=True)
    try:
        yield redis
    finally:
        await redis.aclose()


def test_a_member_missing_from_the_list_counts_itself() -> None:
    assert share_among("b", ["a", "c"]) == PoolShare(3, 1)
    assert share_among("a", []) == PoolShare(1, 0)


async def test_two_members_see_each_other_and_a_clean_stop_leaves(
    redis_server: RedisServer,
) -> None:
    async with client(redis_server) as redis:
        one = ReplicaMembership(redis, CLOCK, member="p-1")
        two = ReplicaMembership(redis, CLOCK, member="p-2")
        one.join("teams", lambda: 3)
        two.join("teams", lambda: 5)
        await one.sync_once()
        await two.sync_once()
        await one.sync_once()
        assert one.share("teams") == PoolShare(2, 0) and two.share("teams") == PoolShare(2, 1)
        listed = await ReplicaSet(redis, "processor/teams").members()
        assert [(r.member, r.held, r.info["role"], r.info["pool"]) for r in listed] == [
            ("p-1", 3, "processor", "teams"),
            ("p-2", 5, "processor", "teams"),
        ]
        await two.close()
        await one.sync_once()
        assert one.share("teams") == PoolShare(1, 0)
        assert one.share("unknown pool") == PoolShare(1, 0)


async def test_a_silent_member_drops_out_after_its_lease(redis_server: RedisServer) -> None:
    async with client(redis_server) as redis:
        one = ReplicaMembership(redis, CLOCK, member="p-1")
        gone = ReplicaMembership(redis, CLOCK, member="p-2")
        for m in (one, gone):
            m.join("teams", lambda: 1)
            await m.sync_once()
        await one.sync_once()  # sees p-2
        changes: list[str] = []
        one.on_change = changes.append
        one.start()
        try:
            await asyncio.sleep(CLOCK.to_wall(gone.lease) * 2)  # p-2 never renews
        finally:
            await one.close()
        assert one.share("teams") == PoolShare(1, 0) and changes == ["teams"]


async def test_without_redis_the_last_share_stays(redis_server: RedisServer) -> None:
    async with client(redis_server) as redis, client(redis_server) as admin:
        one = ReplicaMembership(redis, CLOCK, member="p-1")
        two = ReplicaMembership(redis, CLOCK, member="p-2")
        for m in (one, two):
            m.join("teams", lambda: 0)
            await m.sync_once()
        await one.sync_once()
        await admin.execute_command("CLIENT", "PAUSE", "400", "ALL")  # calls time out
        await one.sync_once()
        assert not one.connected and one.unreachable == 1
        assert one.share("teams") == PoolShare(2, 0)
        await asyncio.sleep(0.5)
        await one.sync_once()
        assert one.connected and one.share("teams") == PoolShare(1, 0)  # p-2 lapsed meanwhile
        await one.close()


# -- two processors on one queue ---------------------------------------------------------

WORKERS, BUDGET, REQUESTS = 8, 0.5, 24  # one processor's target: ceil(0.5 x 8) = 4


def _spec(url: str) -> ProcessorSpec:
    queue = QueueSpec(id="q", queue_name="q", igw_base_url=url, pool_id="teams")
    pool = PoolSpec("teams", WORKERS, "constant", {"budget": str(BUDGET)})
    return ProcessorSpec(
        queues=(queue,), pools=(pool,), result_queue_name="results", poll_interval=0.05
    )


async def _publish(broker: MemoryBroker, count: int) -> None:
    now = CLOCK.now()
    entries = []
    for i in range(count):
        data = {
            "id": f"r-{i:03d}",
            "created": int(now),
            "deadline": now + 600,
            "payload": {"model": "sim-model", "prompt": "hi", "max_tokens": 20},
        }
        entries.append(
            (json.dumps({"internal": {}, "request_kind": "plain", "data": data}), now + 600)
        )
    await broker.enqueue("q", entries)


@pytest.mark.slow
@pytest.mark.serial
async def test_two_processors_each_hold_half_the_target(redis_server: RedisServer) -> None:
    sim = SimConfig(max_num_seqs=64, time_to_first_token=0.5, inter_token_latency=0.1)
    broker = MemoryBroker()  # shared in process; the membership is on Redis
    async with (
        running_simulator(sim, clock=CLOCK) as pool,
        client(redis_server) as redis,
        AsyncExitStack() as stack,
    ):
        procs = []
        for n in range(2):
            membership = ReplicaMembership(redis, CLOCK, member=f"proc-{n}")
            proc = Processor(_spec(pool.urls[0]), broker, clock=CLOCK, membership=membership)
            procs.append(proc)
        for proc in procs:
            await proc.start()
            stack.push_async_callback(proc.stop)
        for proc in procs:
            assert proc.membership is not None
            await proc.membership.sync_once()  # the first one started alone
        assert {p.rt.shares("teams") for p in procs} == {PoolShare(2, 0), PoolShare(2, 1)}
        peaks, totals = [0, 0], []
        await _publish(broker, REQUESTS)
        deadline = time.monotonic() + 60
        done = 0
        while done < REQUESTS and time.monotonic() < deadline:
            levels = [p.pools["teams"].dispatching for p in procs]
            peaks = [max(a, b) for a, b in zip(peaks, levels, strict=True)]
            totals.append(sum(levels))
            while await broker.pop_result("results", 0.0) is not None:
                done += 1
            await asyncio.sleep(0.01)
        assert done == REQUESTS
        assert peaks == [2, 2]  # each half of ceil(0.5 x 8)
        assert max(totals) == 4  # what one processor would hold
        members = await ReplicaSet(redis, "processor/teams").members()
        assert [m.member for m in members] == ["proc-0", "proc-1"]
    async with client(redis_server) as redis:  # a clean stop left the set
        assert await ReplicaSet(redis, "processor/teams").members() == []
