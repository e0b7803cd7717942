"""Strict priority and eviction across router replicas: band 100 requests on one replica take
the pool from band -10 streams running on another, and no band -10 request starts while they
wait."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest
from e2e_rig import SimLog
from replica_rig import SIM, C, complete, replicas, running, until

from sluiceway.localservices import RedisServer
from sluiceway.sim import running_simulator

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.serial]

HIGH, LOW = "reserved-interactive", "overflow-batch"  # bands 100 and -10
# one dispatch cycle plus an eviction on the other replica: a handful of Redis round trips
# and the abort, well under this on a loaded two-core machine
BOUND = 1.0


async def test_band_100_on_one_replica_evicts_band_minus_10_on_another(
    redis_server: RedisServer,
) -> None:
    log = SimLog()
    async with running_simulator(SIM) as sim:
        log.attach(sim.engines[0])
        async with (
            replicas(2, sim.urls[0], redis_server.url) as (a, b),
            aiohttp.ClientSession() as http,
        ):
            streams = [
                asyncio.create_task(complete(http, a, 500, stream=True, objective=LOW))
                for _ in range(C)
            ]
            await until(lambda: running(log) == C)
            queued = [asyncio.create_task(complete(http, a, objective=LOW)) for _ in range(5)]
            await asyncio.sleep(0.3)  # they wait on A
            sent = time.monotonic()
            high = await asyncio.gather(*(complete(http, b, objective=HIGH) for _ in range(5)))
            started = log.starts(objective=HIGH)
            await asyncio.gather(*queued)
            for task in streams:
                task.cancel()
    assert high == [200] * 5
    assert len(started) == 5
    assert max(started) - sent <= BOUND, max(started) - sent
    low_while_waiting = [t for t in log.starts(objective=LOW) if sent < t <= max(started)]
    assert low_while_waiting == []
    assert log.peak() <= C
