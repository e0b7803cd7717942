"""Two and three routers in front of one pool of C = 10 never hold more than C on it with the
ledger (without it each admits C); a SIGKILLed replica's capacity comes back within its lease;
Redis away for 10 s: a local share each, no overshoot, then the ledger is rebuilt."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest
from e2e_rig import SimLog
from replica_rig import SIM, C, Replica, complete, replicas, running, spread, until

from restartable_redis import restartable_redis
from sluiceway.localservices import RedisServer
from sluiceway.sim import running_simulator

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.serial]


@pytest.mark.parametrize(("n", "shared"), [(2, True), (3, True), (2, False)])
async def test_replicas_hold_the_pool_to_its_capacity(
    redis_server: RedisServer, n: int, shared: bool
) -> None:
    log = SimLog()
    async with running_simulator(SIM) as sim:
        log.attach(sim.engines[0])
        ledger = redis_server.url if shared else None
        async with replicas(n, sim.urls[0], ledger) as reps, aiohttp.ClientSession() as http:
            statuses = await spread(http, reps, 40)
    assert statuses == [200] * 40
    if shared:
        assert log.peak() <= C
        assert log.peak() >= C - 1  # and the pool was used, not starved
    else:  # upstream's behaviour: each replica admits the whole pool
        assert log.peak() > C


async def test_a_killed_replica_frees_its_capacity_within_its_lease(
    redis_server: RedisServer,
) -> None:
    lease = 1.0
    log = SimLog()
    async with running_simulator(SIM) as sim:
        log.attach(sim.engines[0])
        async with (
            replicas(2, sim.urls[0], redis_server.url, lease=f"{lease}s") as (a, b),
            aiohttp.ClientSession() as http,
        ):
            long = [asyncio.create_task(complete(http, a, 500, stream=True)) for _ in range(C)]
            await until(lambda: log.peak() == C and running(log) == C)
            await _until_metric(http, b, 'sluiceway_router_ledger_leases{holder="others"', C)
            a.kill()
            killed = time.monotonic()
            before = len(log.starts())
            statuses = await asyncio.gather(*(complete(http, b) for _ in range(C)))
            first = log.starts()[before]
            assert set(await asyncio.gather(*long)) <= {0, 200}
    assert statuses == [200] * C
    waited = first - killed
    # A renewed at most a third of a lease before it died: B waited out the rest, then at
    # most one renewal period of its own (plus the machine's lag) to see the leases gone
    assert lease / 2 <= waited <= lease + lease / 3 + 0.5, waited
    assert log.peak() <= C


async def test_redis_away_for_ten_seconds_no_overshoot_then_the_ledger_rebuilt(
    tmp_path: Path,
) -> None:
    log = SimLog()
    with restartable_redis(tmp_path) as redis:
        async with running_simulator(SIM) as sim:
            log.attach(sim.engines[0])
            async with (
                replicas(2, sim.urls[0], redis.url) as reps,
                aiohttp.ClientSession() as http,
            ):
                done: list[tuple[float, int]] = []
                stop = asyncio.Event()
                clients = [
                    asyncio.create_task(_client(http, reps[i % 2], done, stop)) for i in range(16)
                ]
                await asyncio.sleep(2)
                await asyncio.to_thread(redis.stop)
                away = time.monotonic()
                await asyncio.sleep(10)
                await asyncio.to_thread(redis.start)
                back = time.monotonic()
                for rep in reps:
                    await _until_metric(http, rep, "sluiceway_router_ledger_connected", 1)
                await asyncio.sleep(2)
                stop.set()
                await asyncio.gather(*clients)
                lost = "sluiceway_router_ledger_unreachable_total"
                losses = [await rep.metric(http, lost) for rep in reps]
    assert {status for _, status in done} == {200}
    assert log.peak() <= C
    during = [t for t, _ in done if away + 1 < t < back]
    assert len(during) > 50  # each replica kept serving its share
    assert losses == [1.0, 1.0]
    for rep in reps:
        lost = [line for line in rep.stderr if "ledger" in line and "unreachable" in line]
        assert len(lost) == 1, rep.stderr[-20:]
        assert any("reachable again" in line for line in rep.stderr)


async def _client(
    http: aiohttp.ClientSession, rep: Replica, done: list[tuple[float, int]], stop: asyncio.Event
) -> None:
    while not stop.is_set():
        status = await complete(http, rep)
        done.append((time.monotonic(), status))


async def _until_metric(
    http: aiohttp.ClientSession, rep: Replica, name: str, value: float, within: float = 20.0
) -> None:
    end = time.monotonic() + within
    while await rep.metric(http, name) != value:
        assert time.monotonic() < end, f"{name} never reached {value}"
        await asyncio.sleep(0.05)
