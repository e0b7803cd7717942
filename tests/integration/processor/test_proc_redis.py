"""The processor over the redis-sortedset transport and Redis quota counters: the guide's
``GET quota:team:<team>`` never reads above the limit and returns to 0."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from processor_harness import OBJECTIVE, guide_entry, rig
from prometheus_client import CollectorRegistry

from sluiceway.config.processor_settings import load_processor_settings
from sluiceway.localservices import RedisServer
from sluiceway.processor.build import open_backend, runtime_settings
from sluiceway.processor.service import Processor
from sluiceway.sim import SimConfig
from sluiceway.wire import decode_result

pytestmark = [pytest.mark.redis, pytest.mark.serial]


def transport_config(redis_url: str, sim_url: str) -> str:
    queues = [
        {
            "queue_name": f"team-{team}",
            "worker_pool_id": "teams",
            "igw_base_url": sim_url,
            "labels": {"tier": tier},
            "gate_type": "redis-quota",
            "gate_params": {
                "attribute": "team",
                "mode": "concurrency",
                "limit": str(limit),
                "gating_mode": "classifying",
            },
        }
        for team, tier, limit in (("premium", "interactive", 2), ("batch", "batch", 1))
    ]
    return json.dumps(
        {
            "url": redis_url,
            "result_queue_name": "results-list",
            "poll_interval_ms": 200,
            "queues": queues,
        }
    )


async def test_guide_quota_over_redis(redis_server: RedisServer, tmp_path: Path) -> None:
    config = SimConfig(
        max_num_seqs=8,
        time_to_first_token=0.05,
        inter_token_latency=0.02,
        label_headers=(OBJECTIVE,),
    )
    async with rig(config, scale=10.0) as r:
        merge = {
            "type": "tier-priority",
            "parameters": {
                "fairness_attribute": "team",
                "lane_objectives": {
                    "reserved-batch": "reserved-batch",
                    "overflow-batch": "overflow-batch",
                },
            },
        }
        pools, policy = tmp_path / "pools.json", tmp_path / "merge.json"
        pools.write_text(json.dumps([{"id": "teams", "workers": 6}]))
        policy.write_text(json.dumps(merge))
        settings = load_processor_settings(
            transport="redis-sortedset",
            transport_config=transport_config(redis_server.url, r.url),
            pool_config_file=pools,
            request_merge_policy_config_file=policy,
            env={},
        ).value
        backend = await open_backend(settings, time_scale=r.clock.scale)
        client = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
        peaks = {"quota:team:batch": 0, "quota:team:premium": 0}
        stop = asyncio.Event()

        async def sample() -> None:
            # Stopped by an event, not cancel(): redis-py can swallow a CancelledError that
            # lands inside a command, and the sampler would then never end.
            while not stop.is_set():
                for key in peaks:
                    peaks[key] = max(peaks[key], int(await client.get(key) or 0))
                await asyncio.sleep(0.002)

        try:
            now = r.clock.now()
            await backend.broker.enqueue(
                "team-batch", [guide_entry("batch", i, now=now, max_tokens=10) for i in range(20)]
            )
            await backend.broker.enqueue(
                "team-premium",
                [guide_entry("premium", i, now=now, max_tokens=10) for i in range(6)],
            )
            sampler = asyncio.create_task(sample())
            async with Processor(
                runtime_settings(settings),
                backend.broker,
                clock=r.clock,
                registry=CollectorRegistry(),
                quota_store=backend.quota_stores,
            ):
                raws = [await backend.broker.pop_result("results-list", 20.0) for _ in range(26)]
            stop.set()
            await sampler
            results = [decode_result(raw or "") for raw in raws]
            assert all(res.status_code == 200 for res in results)
            assert peaks["quota:team:batch"] == 1 and peaks["quota:team:premium"] == 2
            assert await client.get("quota:team:batch") == "0"
            assert await client.zcard("team-batch") == 0
            seen = r.sim.engines[0].max_running_by_label(OBJECTIVE)
            assert seen.get("reserved-batch", 0) == 1 and seen.get("overflow-batch", 0) > 0
        finally:
            await client.aclose()
            await backend.aclose()
