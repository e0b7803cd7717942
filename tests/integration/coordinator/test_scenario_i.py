"""Scenario I: the coordinator's modes through the official ``openai`` client, mounted in the
router's process, with the processor on Redis and the simulator behind the router."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import openai
import pytest
from coordinator_rig import GUIDE_CONFIG
from prometheus_client import CollectorRegistry

from integration.router.router_harness import GUIDE_OBJECTIVES, Rig, running_router
from sluiceway.broker import open_broker
from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.config.coordinator import load_coordinator_config
from sluiceway.config.documents import read_document
from sluiceway.coordinator.server import open_coordinator
from sluiceway.localservices import RedisServer
from sluiceway.processor.guide_spec import guide_spec, team_queues
from sluiceway.processor.service import Processor
from sluiceway.sim import SimConfig
from sluiceway.wire.headers import FAIRNESS_ID, OBJECTIVE

pytestmark = pytest.mark.redis

MODEL = "sim-model"
ROUTER = """
apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: concurrency-detector
  parameters: {maxConcurrency: 8}
flowControl:
  saturationDetector: {pluginRef: concurrency-detector}
"""


@dataclass
class Stack:
    router: Rig
    seen: list[dict[str, str]]

    @property
    def base(self) -> str:
        return self.router.url + "/v1"


@contextlib.asynccontextmanager
async def stack(redis_url: str) -> AsyncIterator[Stack]:
    sim = SimConfig(
        time_to_first_token=0.02,
        inter_token_latency=0.01,
        max_num_seqs=8,
        label_headers=(OBJECTIVE, FAIRNESS_ID),
    )
    doc = read_document(GUIDE_CONFIG)
    doc["pipeline"]["steps"][0]["params"]["redis_url"] = redis_url
    config = load_coordinator_config(doc).value
    options = BrokerOptions(url=redis_url)
    async with running_router(ROUTER, sim=sim, objectives=GUIDE_OBJECTIVES, scale=10) as rig:
        seen: list[dict[str, str]] = []
        rig.sim.engines[0].labels.subscribe(
            lambda delta, labels: seen.append(dict(labels)) if delta > 0 else None
        )
        async with open_coordinator(config, clock=rig.clock, router=rig.app):
            broker = await open_broker("redis-sortedset", options)
            stores = await open_quota_stores("redis-sortedset", broker, options)
            spec = guide_spec(team_queues(rig.url), workers=4)
            try:
                async with Processor(
                    spec, broker, clock=rig.clock, registry=CollectorRegistry(), quota_store=stores
                ):
                    yield Stack(rig, seen)
            finally:
                await stores.aclose()
                await broker.aclose()


def headers(tenant: str, mode: str, **more: str) -> dict[str, str]:
    return {"x-llm-d-tenant": tenant, "x-llm-d-async-mode": mode, **more}


async def test_scenario_i_modes_through_the_router_with_the_openai_client(
    redis_server: RedisServer,
) -> None:
    async with stack(redis_server.url) as s:
        # passthrough: live, stamped by the coordinator, client's objective overwritten, streamed
        live_headers = headers("realtime", "passthrough", **{OBJECTIVE: "overflow-batch"})
        async with openai.AsyncOpenAI(
            base_url=s.base, api_key="-", max_retries=0, default_headers=live_headers
        ) as live:
            stream = await live.completions.create(
                model=MODEL, prompt="hi", max_tokens=3, stream=True
            )
            text = "".join([c.choices[0].text async for c in stream if c.choices])
        assert text
        assert s.seen[-1] == {OBJECTIVE: "reserved-interactive", FAIRNESS_ID: "realtime"}

        # wait, with the synchronous client: answered with the model's response
        def sync_wait() -> int:
            with openai.OpenAI(
                base_url=s.base,
                api_key="-",
                max_retries=0,
                default_headers=headers("premium", "wait", **{FAIRNESS_ID: "forged"}),
            ) as client:
                reply = client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=4
                )
                assert reply.usage is not None
                return reply.usage.completion_tokens

        assert await asyncio.to_thread(sync_wait) == 4
        assert s.seen[-1] == {OBJECTIVE: "reserved-interactive", FAIRNESS_ID: "premium"}

        # enqueue: 202, then GET 202/200 for the tenant and 410 for another
        async with aiohttp.ClientSession() as http:
            body = {"model": MODEL, "prompt": "later", "max_tokens": 2}
            async with http.post(
                s.base + "/completions", json=body, headers=headers("batch", "enqueue")
            ) as r:
                assert r.status == 202
                request_id = (await r.json())["id"]
            url = f"{s.router.url}/v1/requests/{request_id}"
            async with http.get(url, headers={"x-llm-d-tenant": "standard"}) as r:
                assert r.status == 410
            status = 202
            for _ in range(500):
                async with http.get(url, headers={"x-llm-d-tenant": "batch"}) as r:
                    status = r.status
                    payload = await r.read()
                if status != 202:
                    break
                await asyncio.sleep(0.02)  # a client polling for its result
            assert status == 200
            assert json.loads(payload)["usage"]["completion_tokens"] == 2
        assert s.seen[-1] == {OBJECTIVE: "reserved-batch", FAIRNESS_ID: "batch"}
