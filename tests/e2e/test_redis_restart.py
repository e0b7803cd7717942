"""A Redis restart under load: every request gets one result and reaches the model once.

After a restart every pooled connection of the processor is stale. A fenced ack that failed
on one used to give the claim up: its lease lapsed and the request ran again. The broker now
retries fenced writes on fresh connections while Redis comes back. Counted where it matters:
dispatches per request id at the simulator.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from e2e_rig import OBJECTIVE, REQUEST_ID, RESULTS, SimLog, guide_entry, guide_settings, queue
from e2e_rig import redis_processor as processor_on
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from restartable_redis import restartable_redis
from sluiceway.clock import RealClock
from sluiceway.sim import SimConfig, running_simulator
from sluiceway.wire import decode_result

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.serial]

SIM = SimConfig(
    max_num_seqs=16,
    time_to_first_token=0.1,
    inter_token_latency=0.05,
    label_headers=(OBJECTIVE, REQUEST_ID),
)


async def results_through_restarts(url: str, count: int, *, within: float) -> list[str]:
    """Result ids popped from the result list, reconnecting while Redis restarts."""
    ids: list[str] = []
    end = time.monotonic() + within
    client = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        while len(ids) < count and time.monotonic() < end:
            try:
                popped = await client.brpop([RESULTS], timeout=0.5)
            except (RedisConnectionError, RedisTimeoutError):
                await asyncio.sleep(0.05)  # Redis is restarting: nothing to wait on but time
                continue
            if popped is not None:
                ids.append(decode_result(popped[1]).id)
    finally:
        await client.aclose()
    return ids


async def test_a_redis_restart_under_load_runs_every_request_once(tmp_path: Path) -> None:
    clock = RealClock()
    with restartable_redis(tmp_path) as redis_server:
        async with running_simulator(SIM, clock=clock) as sim:
            log, started = SimLog(), asyncio.Event()
            log.attach(sim.engines[0])
            sim.engines[0].labels.subscribe(lambda delta, pairs: started.set())
            raw = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
            now = clock.now()
            entries = dict(guide_entry("restart", i, now=now) for i in range(40))
            await raw.zadd("team-restart", entries)
            await raw.aclose()
            queues = [queue("team-restart", sim.urls[0], "batch", None)]
            # Short leases: a claim given up during the restart would be redelivered at once.
            spec = guide_settings(queues, workers=8, claim_lease=3.0, reclaim_interval=0.5)
            async with processor_on(spec, redis_server.url, clock):
                await asyncio.wait_for(started.wait(), 30)  # requests are in flight
                await asyncio.to_thread(redis_server.restart)
                ids = await results_through_restarts(redis_server.url, 40, within=60)
    assert sorted(ids) == sorted(f"restart-{i:04d}" for i in range(40))
    dispatches = Counter(log.started_ids)
    assert set(dispatches) == set(ids)
    assert max(dispatches.values()) == 1, {k: v for k, v in dispatches.items() if v > 1}
