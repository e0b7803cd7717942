"""The processor over the postgres transport and its sql-quota store: scenarios A and B, the
LISTEN/NOTIFY wake-up, an idle processor's silence, start-up and mid-run connection faults."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import asyncpg
import pytest

from e2e.e2e_rig import (
    FAIRNESS,
    OBJECTIVE,
    SimLog,
    collect,
    guide_settings,
    publish,
    redis_processor,
    team_queues,
)
from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.postgres import PostgresBroker, open_postgres_broker
from sluiceway.clock import RealClock
from sluiceway.errors import BrokerError
from sluiceway.ports import free_port
from sluiceway.processor.producer import Producer, request
from sluiceway.sim import SimConfig, running_simulator

pytestmark = [pytest.mark.serial, pytest.mark.slow]

SCALE = 20.0
SIM = SimConfig(
    max_num_seqs=16,
    time_to_first_token=0.05,
    inter_token_latency=0.02,
    label_headers=(OBJECTIVE, FAIRNESS),
)


@contextlib.asynccontextmanager
async def sim_with_log(clock: RealClock) -> AsyncIterator[tuple[str, SimLog]]:
    async with running_simulator(SIM, instances=1, clock=clock) as sim:
        log = SimLog()
        log.attach(sim.engines[0])
        yield sim.urls[0], log


class CountPeaks:
    """Samples the sql-quota counts as an operator's SELECT would, keeping the largest."""

    def __init__(self, dsn: str, keys: list[str]) -> None:
        self.dsn = dsn
        self.peaks = dict.fromkeys(keys, 0)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        conn = await asyncpg.connect(self.dsn)
        try:
            while not self._stop.is_set():
                rows = await conn.fetch(
                    "SELECT key, count FROM sluiceway.quota_count WHERE key = ANY($1)",
                    list(self.peaks),
                )
                for key, count in rows:
                    self.peaks[key] = max(self.peaks[key], int(count))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 0.002)
        finally:
            await conn.close()

    async def __aenter__(self) -> CountPeaks:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._stop.set()
        await self._task


async def quota_counts(dsn: str) -> dict[str, int]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT key, count FROM sluiceway.quota_count")
        return {key: int(count) for key, count in rows}
    finally:
        await conn.close()


async def test_scenario_a_one_worker_dispatches_in_tier_order(postgres_dsn: str) -> None:
    clock = RealClock(scale=SCALE)
    async with sim_with_log(clock) as (url, log):
        producer = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
        for team in ("batch", "standard", "premium"):
            await publish(producer, clock.now(), team, 1)
        settings = guide_settings(team_queues(url), workers=1)
        async with redis_processor(settings, postgres_dsn, clock, transport="postgres"):
            results = await collect(producer, 3, within=30)
        assert [r.status_code for r in results] == [200, 200, 200]
        assert [r.id.split("-")[0] for r in results] == ["premium", "standard", "batch"]
        objectives = {e[2] for e in log.events}
        assert objectives == {"reserved-interactive", "reserved-async", "reserved-batch"}
        assert {e[3] for e in log.events} == {"premium", "standard", "batch"}
        await producer.aclose()


async def test_scenario_b_reserved_lanes_stay_within_sql_quota(postgres_dsn: str) -> None:
    clock = RealClock(scale=SCALE)
    async with sim_with_log(clock) as (url, log):
        producer = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
        await publish(producer, clock.now(), "batch", 100)
        await publish(producer, clock.now(), "premium", 20)
        keys = ["quota:team:batch", "quota:team:premium"]
        settings = guide_settings(team_queues(url), workers=16)
        async with (
            CountPeaks(postgres_dsn, keys) as sampled,
            redis_processor(settings, postgres_dsn, clock, transport="postgres"),
        ):
            results = await collect(producer, 120, within=90)
        assert all(r.status_code == 200 for r in results)
        assert len({r.id for r in results}) == 120
        assert log.peak(objective="reserved-batch") == 1
        assert log.peak(objective="reserved-interactive") == 2
        assert log.peak(objective="overflow-batch") > 0
        assert log.peak(objective="overflow-interactive") > 0
        assert sampled.peaks == {"quota:team:batch": 1, "quota:team:premium": 2}
        assert max(log.ends(team="premium")) < max(log.starts(objective="overflow-batch"))
        counts = await quota_counts(postgres_dsn)
        assert counts["quota:team:batch"] == 0 and counts["quota:team:premium"] == 0
        assert await producer.result_count("results-list") == 0
        await producer.aclose()


async def test_an_idle_processor_sends_nothing_and_wakes_on_notify(postgres_dsn: str) -> None:
    """Idle for two poll intervals: no statement at all (reclaim and backlog rounds are set
    beyond the window). Then an arrival reaches the model server within a quarter of the poll
    interval, woken by NOTIFY, not by the poll."""
    clock = RealClock()
    poll_interval = 2.0
    async with sim_with_log(clock) as (url, log):
        producer = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
        settings = guide_settings(
            team_queues(url), workers=4, poll_interval=poll_interval, reclaim_interval=600.0
        )
        async with redis_processor(settings, postgres_dsn, clock, transport="postgres") as (
            _,
            broker,
        ):
            assert isinstance(broker, PostgresBroker)
            await asyncio.sleep(poll_interval * 1.2)  # settle: every loop has looked once
            before = broker.round_trips
            await asyncio.sleep(poll_interval * 2)  # idle window
            idle_statements = broker.round_trips - before
            started = time.monotonic()
            await publish(producer, clock.now(), "standard", 1)
            await collect(producer, 1, within=10)
        assert idle_statements == 0
        assert log.events, "the request never reached the model server"
        assert log.events[0][0] - started < poll_interval / 4
        await producer.aclose()


async def test_an_unreachable_database_at_start_is_one_clear_error() -> None:
    dsn = f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere"
    with pytest.raises(BrokerError, match=r"cannot connect to PostgreSQL at 127\.0\.0\.1"):
        await open_postgres_broker(BrokerOptions(url=dsn))


async def _terminate_other_backends(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return len(rows)
    finally:
        await conn.close()


async def test_a_lost_connection_mid_run_warns_once_and_loses_nothing(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = RealClock(scale=SCALE)
    caplog.set_level(logging.WARNING, logger="sluiceway.broker.postgres_db")
    async with sim_with_log(clock) as (url, _log):
        settings = guide_settings(team_queues(url), workers=8)
        async with redis_processor(settings, postgres_dsn, clock, transport="postgres") as (
            _,
            broker,
        ):
            await publish(broker, clock.now(), "batch", 40)
            await publish(broker, clock.now(), "premium", 20)
            first = await collect(broker, 10, within=30)
            assert await _terminate_other_backends(postgres_dsn) > 0
            rest = await collect(broker, 50, within=60)
        ids = [r.id for r in first + rest]
        assert len(ids) == 60 and len(set(ids)) == 60
        assert all(r.status_code == 200 for r in first + rest)
        lost = [r for r in caplog.records if "lost the PostgreSQL connection" in r.getMessage()]
        assert len(lost) == 1
        counts = await quota_counts(postgres_dsn)
        assert all(v == 0 for v in counts.values())


async def test_producer_routes_and_cancellation_over_postgres(postgres_dsn: str) -> None:
    """A producer's own result route; one request cancelled while queued, one in flight (the
    in-flight check is answered from NOTIFY, so it reacts to a cancel without polling it)."""
    clock = RealClock(scale=SCALE)
    slow = SimConfig(max_num_seqs=4, time_to_first_token=0.05, inter_token_latency=0.5)
    async with running_simulator(slow, instances=1, clock=clock) as sim:
        started = asyncio.Event()
        sim.engines[0].labels.subscribe(lambda delta, _pairs: delta > 0 and started.set())
        broker = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
        producer = Producer(broker, queue="team-batch", result_queue="route-of-producer-7")
        deadline = clock.now() + 600
        body = {"model": "sim-model", "prompt": "hi", "max_tokens": 200}
        await producer.submit(request("queued", body, deadline=deadline))
        assert await producer.cancel(["queued"]) == {"queued": True}
        await producer.submit(request("long", body, deadline=deadline))
        settings = guide_settings(
            [replace(q, pool_id="teams") for q in team_queues(sim.urls[0])[2:]], workers=2
        )
        async with redis_processor(settings, postgres_dsn, clock, transport="postgres"):
            first = await producer.get_result(block_for=20)
            assert first is not None and (first.id, first.error_code) == ("queued", "CANCELLED")
            await asyncio.wait_for(started.wait(), 20)
            assert await producer.cancel(["long"]) == {"long": True}
            second = await producer.get_result(block_for=20)
        assert second is not None and (second.id, second.error_code) == ("long", "CANCELLED")
        assert await producer.cancel(["long"]) == {"long": False}
        assert await broker.result_count("results-list") == 0
        await broker.aclose()


async def test_retries_wait_out_retry_after_in_the_retry_table(postgres_dsn: str) -> None:
    """Two 503s with Retry-After 10 s (scaled): the request waits in ``sluiceway.retries`` twice
    and is answered 200 about 20 scaled seconds later, once."""
    clock = RealClock(scale=20.0)
    async with sim_with_log(clock) as (url, _log):
        producer = await open_postgres_broker(BrokerOptions(url=postgres_dsn))
        data = {
            "id": "retried",
            "deadline": clock.now() + 600,
            "payload": {"model": "sim-model", "prompt": "hi", "max_tokens": 4},
            "headers": {"X-Return-Error": "503;retry-after=10;times=2"},
            "metadata": {"team": "batch"},
        }
        member = json.dumps({"internal": {}, "request_kind": "plain", "data": data})
        start = clock.now()
        await producer.enqueue("team-batch", [(member, data["deadline"])])
        settings = guide_settings(team_queues(url)[2:], workers=1)
        async with redis_processor(settings, postgres_dsn, clock, transport="postgres"):
            (result,) = await collect(producer, 1, within=30)
            elapsed = clock.now() - start
        assert (result.id, result.status_code) == ("retried", 200)
        assert 20.0 <= elapsed < 20.0 * 1.25 + 10.0  # start-up and dispatches, scaled 20x
        assert await producer.result_count("results-list") == 0
        assert await producer.next_retry_due() is None
        await producer.aclose()
