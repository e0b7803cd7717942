"""Processors killed with SIGKILL on one Redis: quota under fire, and a kill between an
HTTP answer and its ack (time scale 1).

Several ``sluiceway processor`` processes share a Redis and the simulator (in this process,
where every running request is observed). A supervisor kills processes that have requests in
flight and restarts them; one process also kills itself between an HTTP answer and its ack (the
test-only entry ``faulty_processor.py``). Checked: reserved requests in flight per team never
exceed the team's limit, every request ends with exactly one result, and the quota counts return
to 0.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from e2e_rig import FAIRNESS, OBJECTIVE, REQUEST_ID, RESULTS, SimLog, guide_entry
from fleet import TEAMS, Fleet, Member, fleet, inflight, write_configs

from sluiceway.clock import RealClock
from sluiceway.localservices import RedisServer
from sluiceway.sim import SimConfig, running_simulator

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.serial]

LEASE = 3.0
RECLAIM_MS = 500
QUOTA_KEYS = [f"quota:team:{team}" for team in TEAMS]
SIM = SimConfig(
    max_num_seqs=24,
    time_to_first_token=0.1,
    inter_token_latency=0.06,
    label_headers=(OBJECTIVE, FAIRNESS, REQUEST_ID),
)


async def _publish(raw: aioredis.Redis, counts: dict[str, int]) -> list[str]:
    now, ids = time.time(), []
    for team, count in counts.items():
        entries = dict(guide_entry(team, i, now=now) for i in range(count))
        await raw.zadd(f"team-{team}", entries)
        ids += [f"{team}-{i:04d}" for i in range(count)]
    return ids


async def _collect(raw: aioredis.Redis, count: int, within: float) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    end = time.monotonic() + within
    while len(out) < count and time.monotonic() < end:
        popped = await raw.brpop([RESULTS], timeout=0.5)
        if popped is not None:
            out.append(json.loads(popped[1]))
    # Anything beyond ``count`` would be a duplicate: give it a moment to show up.
    while (popped := await raw.brpop([RESULTS], timeout=1.0)) is not None:
        out.append(json.loads(popped[1]))
    return out


async def _supervise(
    f: Fleet, kills: int, done: asyncio.Event, rng: random.Random, protected: Member | None
) -> None:
    """Kill a member with requests in flight every ~half second and restart it; restart members
    that killed themselves. ``protected`` (the fault-hook member) is left to die by its hook."""
    while f.kills < kills and not done.is_set():
        await asyncio.sleep(rng.uniform(0.4, 0.8))
        for member in [m for m in f.members if m.proc.poll() is not None and not m.restarted]:
            member.restarted = True
            await asyncio.to_thread(f.start)
        candidates = [m for m in f.alive() if m is not protected]
        busy = [m for m in candidates if await asyncio.to_thread(inflight, m) > 0]
        if busy:
            victim = rng.choice(busy)
            await asyncio.to_thread(f.kill, victim)
            victim.restarted = True
            await asyncio.to_thread(f.start)


async def _quota_back_to_zero(raw: aioredis.Redis, within: float) -> list[str | None]:
    end = time.monotonic() + within
    while True:
        values = await raw.mget(QUOTA_KEYS)
        if all(v in (None, "0") for v in values) or time.monotonic() > end:
            return list(values)
        await asyncio.sleep(0.05)


async def _run(
    redis_server: RedisServer,
    tmp_path: Path,
    *,
    processes: int,
    counts: dict[str, int],
    kills: int,
    fault_at: int | None,
) -> tuple[SimLog, list[dict[str, object]], list[str], Fleet, list[str | None]]:
    raw = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    async with running_simulator(SIM, instances=1, clock=RealClock()) as sim:
        log = SimLog()
        log.attach(sim.engines[0])
        flags = write_configs(
            tmp_path, redis_url=redis_server.url, sim_url=sim.urls[0], workers=16,
            lease=LEASE, reclaim_ms=RECLAIM_MS,
        )  # fmt: skip
        with fleet(tmp_path, flags) as f:
            first = await asyncio.to_thread(f.start, fault_at or None)
            for _ in range(processes - 1):
                await asyncio.to_thread(f.start)
            ids = await _publish(raw, counts)
            done = asyncio.Event()
            rng = random.Random(7)
            protected = first if fault_at else None
            supervisor = asyncio.create_task(_supervise(f, kills, done, rng, protected))
            results = await _collect(raw, len(ids), within=180)
            done.set()
            await supervisor
            quota = await _quota_back_to_zero(raw, within=LEASE + 2 * RECLAIM_MS / 1000 + 1)
    await raw.aclose()
    return log, results, ids, f, quota


async def test_quota_under_fire_never_exceeds_a_teams_limit(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    counts = {"premium": 60, "standard": 60, "batch": 60}
    log, results, ids, f, quota = await _run(
        redis_server, tmp_path, processes=3, counts=counts, kills=4, fault_at=None
    )
    assert f.kills >= 4
    assert sorted(str(r["id"]) for r in results) == sorted(ids)
    for team, (tier, limit) in TEAMS.items():
        assert log.peak(objective=f"reserved-{tier}", team=team) <= limit
        assert log.peak(objective=f"reserved-{tier}") <= limit
    assert quota == ["0", "0", "0"]


async def test_scenario_j_kills_lose_nothing_and_answer_each_request_once(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    counts = {"premium": 100, "standard": 150, "batch": 250}
    log, results, ids, f, quota = await _run(
        redis_server, tmp_path, processes=2, counts=counts, kills=5, fault_at=60
    )
    per_id = Counter(str(r["id"]) for r in results)
    assert f.kills >= 5
    fault_member = f.members[0]
    assert fault_member.proc.returncode == -9
    assert "fault hook: killing this process before ack 60" in fault_member.log.read_text()
    assert set(per_id) == set(ids), f"lost: {sorted(set(ids) - set(per_id))[:10]}"
    assert max(per_id.values()) == 1, f"duplicated: {[k for k, v in per_id.items() if v > 1]}"
    executions = Counter(log.started_ids)
    duplicates = sum(n - 1 for n in executions.values() if n > 1)
    print(f"\ncrash runs: {len(ids)} requests, {f.kills} kills + 1 fault kill, "
          f"{duplicates} duplicate upstream executions")  # fmt: skip
    assert quota == ["0", "0", "0"]
