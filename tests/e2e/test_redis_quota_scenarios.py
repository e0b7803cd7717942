"""The guide's quota scenarios (B, B2, B3, as the demo names them) on real Redis, Redis quotas
and the simulator (and B once more on the SQLite transport)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from e2e_rig import (
    FAIRNESS,
    OBJECTIVE,
    SimLog,
    collect,
    guide_settings,
    publish,
    queue,
    quota_params,
    redis_processor,
    team_queues,
)

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.redis import open_redis_broker
from sluiceway.broker.sqlite import open_sqlite_broker
from sluiceway.clock import RealClock
from sluiceway.localservices import RedisServer
from sluiceway.sim import SimConfig, running_simulator

pytestmark = [pytest.mark.redis, pytest.mark.slow]

SCALE = 20.0
SIM = SimConfig(
    max_num_seqs=16,
    time_to_first_token=0.05,
    inter_token_latency=0.02,
    label_headers=(OBJECTIVE, FAIRNESS),
)


class KeyPeaks:
    """Samples quota keys with GET, as an operator would, and keeps the largest value."""

    def __init__(self, url: str, keys: list[str]) -> None:
        self.peaks = dict.fromkeys(keys, 0)
        self._raw = aioredis.Redis.from_url(url, decode_responses=True)
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def _run(self) -> None:
        # Stopped by an event, not by cancel: a cancel landing inside a redis-py call can be
        # absorbed there, which would leave this loop running.
        while not self._stop.is_set():
            values = await self._raw.mget(list(self.peaks))
            for key, value in zip(self.peaks, values, strict=True):
                self.peaks[key] = max(self.peaks[key], int(value or 0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 0.002)

    async def __aenter__(self) -> KeyPeaks:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._stop.set()
        await self._task
        await self._raw.aclose()


@contextlib.asynccontextmanager
async def sim_with_log(clock: RealClock) -> AsyncIterator[tuple[str, SimLog]]:
    async with running_simulator(SIM, instances=1, clock=clock) as sim:
        log = SimLog()
        log.attach(sim.engines[0])
        yield sim.urls[0], log


async def test_scenario_b_reserved_lanes_stay_within_quota_and_premium_finishes_first(
    redis_server: RedisServer,
) -> None:
    clock = RealClock(scale=SCALE)
    async with sim_with_log(clock) as (url, log):
        producer = await open_redis_broker(BrokerOptions(url=redis_server.url))
        await publish(producer, clock.now(), "batch", 100)
        await publish(producer, clock.now(), "premium", 20)
        keys = ["quota:team:batch", "quota:team:premium"]
        settings = guide_settings(team_queues(url), workers=16)
        async with (
            KeyPeaks(redis_server.url, keys) as sampled,
            redis_processor(settings, redis_server.url, clock),
        ):
            results = await collect(producer, 120, within=60)
        assert all(r.status_code == 200 for r in results)
        assert log.peak(objective="reserved-batch") == 1
        assert log.peak(objective="reserved-interactive") == 2
        assert log.peak(objective="overflow-batch") > 0
        assert log.peak(objective="overflow-interactive") > 0
        assert sampled.peaks == {"quota:team:batch": 1, "quota:team:premium": 2}
        assert max(log.ends(team="premium")) < max(log.starts(objective="overflow-batch"))
        raw = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
        assert await raw.mget(keys) == ["0", "0"]
        assert await raw.exists("quota:team:batch:holders", "quota:team:premium:holders") == 0
        await raw.aclose()
        await producer.aclose()


async def test_scenario_b2_one_team_overflows_while_the_other_stays_reserved(
    redis_server: RedisServer,
) -> None:
    clock = RealClock(scale=SCALE)
    async with sim_with_log(clock) as (url, log):
        producer = await open_redis_broker(BrokerOptions(url=redis_server.url))
        shared = queue("team-shared", url, "async", quota_params(1, "classifying"))
        await publish(producer, clock.now(), "alpha", 12, queue="team-shared")
        await publish(producer, clock.now(), "beta", 1, queue="team-shared")
        async with redis_processor(guide_settings([shared], workers=8), redis_server.url, clock):
            results = await collect(producer, 13, within=60)
        assert all(r.status_code == 200 for r in results)
        assert log.starts(team="beta", objective="reserved-async") and not log.starts(
            team="beta", objective="overflow-async"
        )
        assert log.starts(team="alpha", objective="overflow-async")
        assert log.peak(team="alpha", objective="reserved-async") == 1
        await producer.aclose()


async def test_scenario_b3_blocking_mode_keeps_over_quota_work_queued(
    redis_server: RedisServer,
) -> None:
    clock = RealClock(scale=SCALE)
    async with sim_with_log(clock) as (url, log):
        producer = await open_redis_broker(BrokerOptions(url=redis_server.url))
        await publish(producer, clock.now(), "batch", 10)
        await publish(producer, clock.now(), "premium", 6)
        settings = guide_settings(team_queues(url, gating_mode="blocking"), workers=16)
        async with redis_processor(settings, redis_server.url, clock):
            results = await collect(producer, 16, within=60)
        assert all(r.status_code == 200 for r in results)
        assert not [e for e in log.events if e[2].startswith("overflow")]
        assert log.peak(team="batch") == 1
        assert log.peak(team="premium") == 2
        await producer.aclose()


async def test_scenario_b_on_the_sqlite_transport(tmp_path: Path) -> None:
    """The same quota guarantees with the embedded broker and the SQLite quota store."""
    clock = RealClock(scale=SCALE)
    path = str(tmp_path / "sluiceway.db")
    async with sim_with_log(clock) as (url, log):
        producer = await open_sqlite_broker(BrokerOptions(url=path))
        await publish(producer, clock.now(), "batch", 30)
        await publish(producer, clock.now(), "premium", 10)
        settings = guide_settings(team_queues(url), workers=16)
        async with redis_processor(settings, path, clock, transport="sqlite") as (_, broker):
            results = await collect(broker, 40, within=60)
        assert all(r.status_code == 200 for r in results)
        assert log.peak(objective="reserved-batch") == 1
        assert log.peak(objective="reserved-interactive") == 2
        assert log.peak(objective="overflow-batch") > 0
        await producer.aclose()


@pytest.mark.serial
async def test_an_entry_on_an_idle_queue_is_sent_within_a_quarter_of_the_poll_interval(
    redis_server: RedisServer,
) -> None:
    """Keyspace events, not the poll, wake an idle consumer: events on, ``poll_interval_ms``
    1000, time scale 1."""
    clock = RealClock()
    poll_interval = 1.0
    async with sim_with_log(clock) as (url, log):
        producer = await open_redis_broker(BrokerOptions(url=redis_server.url))
        settings = guide_settings(team_queues(url), workers=4, poll_interval=poll_interval)
        async with redis_processor(settings, redis_server.url, clock):
            await asyncio.sleep(poll_interval * 1.3)  # idle: every ingest is waiting
            started = time.monotonic()  # the clock SimLog stamps its events with
            await publish(producer, clock.now(), "standard", 1)
            await collect(producer, 1, within=10)
        assert log.events, "the request never reached the model server"
        assert log.events[0][0] - started < poll_interval / 4
        await producer.aclose()
