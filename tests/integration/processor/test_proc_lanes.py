"""Scenario B, strict lanes across all six lanes, EDF inside a queue."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

import pytest
from processor_harness import (
    OBJECTIVE,
    collect,
    guide_entry,
    guide_settings,
    publish,
    rig,
    team_queues,
)
from prometheus_client import CollectorRegistry

from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.processor.lane_scheduler import LaneScheduler, Picked
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import QueueSpec
from sluiceway.sim import SimConfig

pytestmark = pytest.mark.serial


async def test_scenario_b_quota_caps_reserved_lanes_and_premium_finishes_first() -> None:
    config = SimConfig(
        max_num_seqs=16,
        time_to_first_token=0.05,
        inter_token_latency=0.02,
        label_headers=(OBJECTIVE,),
    )
    async with rig(config) as r:
        store = MemoryQuotaStore()
        peaks = {"quota:team:batch": 0, "quota:team:premium": 0}

        async def sample() -> None:
            while True:
                for key in peaks:
                    peaks[key] = max(peaks[key], await store.count(key))
                await asyncio.sleep(0.001)

        await publish(r.broker, r.clock, "batch", 100)
        await publish(r.broker, r.clock, "premium", 20)
        settings = guide_settings(team_queues(r.url), workers=16)
        sampler = asyncio.create_task(sample())
        async with Processor(
            settings,
            r.broker,
            clock=r.clock,
            registry=CollectorRegistry(),
            quota_store=lambda address: store,
        ):
            results = await collect(r.broker, 120, within=60)
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
        assert all(res.status_code == 200 for res in results)
        seen = r.sim.engines[0].max_running_by_label(OBJECTIVE)
        assert seen.get("reserved-batch", 0) <= 1 and seen.get("reserved-interactive", 0) <= 2
        assert seen.get("overflow-batch", 0) > 0 and seen.get("overflow-interactive", 0) > 0
        assert peaks["quota:team:batch"] <= 1 and peaks["quota:team:premium"] <= 2
        assert peaks["quota:team:batch"] == 1 and peaks["quota:team:premium"] == 2
        order = [res.id.split("-")[0] for res in results]
        last_premium = max(i for i, team in enumerate(order) if team == "premium")
        assert last_premium < len(order) - 16  # premium done before the final batch wave
        assert await store.count("quota:team:batch") == 0


class RecordingScheduler(LaneScheduler[object]):
    """Records, at each pop, how many items waited in each lane just before it."""

    def __init__(self) -> None:
        super().__init__("tier-priority")
        self.pops: list[tuple[int, list[int]]] = []

    def pop(self) -> Picked[object] | None:
        before = self.count_by_lane()
        picked = super().pop()
        if picked is not None:
            self.pops.append((picked.lane, before))
        return picked


async def test_one_worker_never_serves_a_lane_while_a_higher_lane_waits() -> None:
    async with rig() as r:
        queues = [
            replace(q, gate_params={**q.gate_params, "limit": "1"}) for q in team_queues(r.url)
        ]
        for team in ("batch", "standard", "premium"):
            await publish(r.broker, r.clock, team, 6)
        settings = guide_settings(queues, workers=1, buffer_per_queue=3)
        proc = Processor(settings, r.broker, clock=r.clock, registry=CollectorRegistry())
        recording = RecordingScheduler()
        proc.pools["teams"].scheduler = recording  # type: ignore[assignment]
        async with proc:
            results = await collect(r.broker, 18, within=60)
        assert all(res.status_code == 200 for res in results)
        lanes = {lane for lane, _ in recording.pops}
        assert lanes == {0, 1, 2, 3, 4, 5}
        for lane, before in recording.pops:
            assert all(count == 0 for count in before[:lane]), (lane, before)


async def test_earliest_deadline_first_inside_a_queue() -> None:
    async with rig() as r:
        queue = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        now = r.clock.now()
        entries = [guide_entry("t", i, now=now, ttl=ttl) for i, ttl in enumerate([300, 100, 200])]
        await r.broker.enqueue("q", entries)
        async with Processor(
            guide_settings([queue], workers=1),
            r.broker,
            clock=r.clock,
            registry=CollectorRegistry(),
        ):
            results = await collect(r.broker, 3)
        assert [res.id for res in results] == ["t-r-0001", "t-r-0002", "t-r-0000"]
