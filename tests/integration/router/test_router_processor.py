"""Scenario F end to end: the processor's sheddable work fills the pool through the router; a
realtime request evicts one; the processor retries the evicted request and it completes."""

from __future__ import annotations

import json

import aiohttp
from prometheus_client import CollectorRegistry
from router_harness import GUIDE_OBJECTIVES, ident, running_router, until

from sluiceway.broker.memory import MemoryBroker
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.sim import SimConfig
from sluiceway.wire import decode_result

EVICTION = """
apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: concurrency-detector
  parameters: {maxConcurrency: 4}
flowControl:
  saturationDetector: {pluginRef: concurrency-detector}
  enableEviction: true
"""


def _entry(index: int, now: float) -> tuple[str, float]:
    data = {
        "id": f"batch-{index}",
        "created": int(now),
        "deadline": now + 600,
        "payload": {"model": "sim-model", "prompt": "summarize this", "max_tokens": 300},
    }
    return json.dumps({"internal": {}, "request_kind": "plain", "data": data}), now + 600


async def test_evicted_request_is_retried_by_the_processor_and_completes() -> None:
    sim = SimConfig(time_to_first_token=0.01, inter_token_latency=0.02, max_num_seqs=8)
    async with running_router(EVICTION, sim=sim, objectives=GUIDE_OBJECTIVES, scale=10) as rig:
        broker = MemoryBroker()
        queue = QueueSpec(
            id="q",
            queue_name="q",
            igw_base_url=rig.url,
            pool_id="p",
            inference_objective="overflow-batch",
        )
        settings = ProcessorSpec(
            queues=(queue,), pools=(PoolSpec(id="p", workers=4),), result_queue_name="results"
        )
        now = rig.clock.now()
        await broker.enqueue("q", [_entry(i, now) for i in range(4)])
        async with Processor(settings, broker, clock=rig.clock, registry=CollectorRegistry()):
            engine = rig.sim.engines[0]
            await until(lambda: engine.num_running == 4, what="the pool full of batch work")
            async with aiohttp.ClientSession() as s:
                payload = {"model": "sim-model", "prompt": "now", "max_tokens": 2}
                headers = ident("reserved-interactive")
                async with s.post(rig.url + "/v1/completions", json=payload, headers=headers) as r:
                    assert r.status == 200
            results = []
            for _ in range(4):
                raw = await broker.pop_result("results", 60)
                assert raw is not None
                results.append(decode_result(raw))
        assert sorted(r.id for r in results) == [f"batch-{i}" for i in range(4)]
        assert {r.status_code for r in results} == {200}
        controller = rig.gateway.controller
        assert controller is not None and controller.evictor.confirmed >= 1
