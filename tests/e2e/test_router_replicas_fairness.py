"""Tenant fairness across router replicas: three tenants over three replicas in one band hold
the pool in equal shares, whichever replicas their requests reach.

Tenant A's clients go through replicas 1 and 3, tenants B's and C's through replica 2 (sticky
keep-alive connections do this). Each replica alone would give the pool to its own tenants by
replica (A two thirds, B and C a sixth each); sharing the band by tenant gives each a third.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import aiohttp
import pytest
from e2e_rig import SimLog
from replica_rig import SIM, C, Replica, complete, replicas, until

from sluiceway.localservices import RedisServer
from sluiceway.sim import running_simulator

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.serial]

CLIENTS = 6  # per tenant and replica: every tenant keeps a backlog on each of its replicas
WINDOW = 6.0  # seconds measured, after the shares settled
# docs/flow-control.md: each tenant within one request per replica of C / T, plus what
# starts within one ledger call; measured as the mean in flight over the window
BOUND = 1.0


def mean_running(log: SimLog, tenant: str, start: float, end: float) -> float:
    """Time-weighted mean of ``tenant``'s requests running on the simulator in the window."""
    running, area, last = 0, 0.0, start
    for t, delta, _, fid in log.events:
        if fid != tenant:
            continue
        if t > start:
            area += running * (min(t, end) - last)
            last = min(t, end)
        running += delta
    return (area + running * (end - last)) / (end - start)


async def clients(
    http: aiohttp.ClientSession, rep: Replica, tenant: str, stop: asyncio.Event
) -> list[int]:
    async def one() -> list[int]:
        codes = []
        while not stop.is_set():
            codes.append(await complete(http, rep, tenant=tenant))
        return codes

    done = await asyncio.gather(*(one() for _ in range(CLIENTS)))
    return [c for codes in done for c in codes]


async def shares(placement: Sequence[tuple[int, str]], ledger: str) -> dict[str, float]:
    log = SimLog()
    async with running_simulator(SIM) as sim:
        log.attach(sim.engines[0])
        async with (
            replicas(3, sim.urls[0], ledger) as reps,
            aiohttp.ClientSession() as http,
        ):
            stop = asyncio.Event()
            tasks = [asyncio.create_task(clients(http, reps[i], t, stop)) for i, t in placement]
            await until(lambda: len(log.starts()) >= 3 * C)  # past the start-up race
            start = time.monotonic()
            await asyncio.sleep(WINDOW)
            end = time.monotonic()
            stop.set()
            codes = [c for result in await asyncio.gather(*tasks) for c in result]
    assert set(codes) == {200}, sorted(set(codes))
    assert log.peak() <= C
    return {t: mean_running(log, t, start, end) for t in sorted({t for _, t in placement})}


async def test_three_tenants_over_three_replicas_share_a_band_equally(
    redis_server: RedisServer,
) -> None:
    held = await shares(
        [(0, "team-a"), (2, "team-a"), (1, "team-b"), (1, "team-c")], redis_server.url
    )
    assert sum(held.values()) > C - 1  # the pool stays full
    for mean in held.values():
        assert abs(mean - C / 3) <= BOUND, held
