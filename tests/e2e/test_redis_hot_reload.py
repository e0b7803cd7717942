"""Hot reload on Redis (``--transport-config-watch-interval``), one ``sluiceway processor``.

Mid-run the transport config loses ``team-batch``. Requests of the unchanged queue all finish
with exactly one result; the removed queue's claims are all released (its in-flight requests
finish, the rest wait in the queue for whoever serves it), and nothing is answered twice.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from e2e_rig import FAIRNESS, OBJECTIVE, RESULTS, guide_entry
from fleet import fleet, write_configs

from sluiceway.clock import RealClock
from sluiceway.localservices import RedisServer
from sluiceway.sim import SimConfig, running_simulator

pytestmark = [pytest.mark.redis, pytest.mark.slow, pytest.mark.serial]

SIM = SimConfig(
    max_num_seqs=8,
    time_to_first_token=0.1,
    inter_token_latency=0.06,
    label_headers=(OBJECTIVE, FAIRNESS),
)
COUNT = 40


async def _results(raw: aioredis.Redis, until: float, *, premium: int = COUNT + 1) -> list[str]:
    """Results until ``until`` (monotonic) or, once ``premium`` premium ones came, 1 s more."""
    ids: list[str] = []
    while time.monotonic() < until:
        popped = await raw.brpop([RESULTS], timeout=0.2)
        if popped is not None:
            ids.append(str(json.loads(popped[1])["id"]))
            if sum(i.startswith("premium") for i in ids) >= premium:
                until = min(until, time.monotonic() + 1.0)
    return ids


async def test_removing_a_queue_releases_its_claims_and_keeps_the_others_running(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    raw = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    async with running_simulator(SIM, instances=1, clock=RealClock()) as sim:
        flags = write_configs(
            tmp_path, redis_url=redis_server.url, sim_url=sim.urls[0], workers=8,
            lease=30, reclaim_ms=500,
        )  # fmt: skip
        flags += ["--transport-config-watch-interval", "200ms"]
        with fleet(tmp_path, flags) as f:
            await asyncio.to_thread(f.start)
            now = time.time()
            for team in ("premium", "batch"):
                entries = dict(guide_entry(team, i, now=now) for i in range(COUNT))
                await raw.zadd(f"team-{team}", entries)
            ids = await _results(raw, time.monotonic() + 1.5)
            config = json.loads((tmp_path / "transport.json").read_text())
            config["queues"] = [q for q in config["queues"] if q["id"] != "team-batch"]
            (tmp_path / "transport.json").write_text(json.dumps(config))
            left = COUNT - sum(i.startswith("premium") for i in ids)
            ids += await _results(raw, time.monotonic() + 30, premium=left)
            claimed_batch = await raw.hlen("team-batch:claimed")
            pending_batch = await raw.zcard("team-batch")
            log = f.members[0].log.read_text()
    await raw.aclose()
    per_id = Counter(ids)
    assert max(per_id.values()) == 1
    assert {i for i in per_id if i.startswith("premium")} == {
        f"premium-{i:04d}" for i in range(COUNT)
    }
    answered_batch = sum(1 for i in per_id if i.startswith("batch"))
    assert claimed_batch == 0
    assert pending_batch > 0 and answered_batch + pending_batch == COUNT, log[-2000:]
