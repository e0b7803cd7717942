"""The Batch API through a router with the coordinator mounted: ``/v1/files`` and
``/v1/batches`` reach the coordinator on the router's port, and a batch's lines run through
the router's flow control (the processor sends them to the router)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import openai
from prometheus_client import CollectorRegistry
from router_harness import GUIDE_OBJECTIVES, coordinator_params, running_router

from sluiceway.batch.local_files import LocalFileStore
from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.stores import BatchStores
from sluiceway.broker.memory import MemoryBroker
from sluiceway.coordinator.server import mount_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.processor.guide_spec import guide_spec, team_queues
from sluiceway.processor.service import Processor
from sluiceway.sim import SimConfig

PLAIN = "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"
LINES = 30


def lines() -> bytes:
    docs = [
        {
            "custom_id": f"c{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "sim-model",
                "messages": [{"role": "user", "content": f"hello {i}"}],
                "max_tokens": 2,
            },
        }
        for i in range(LINES)
    ]
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)


async def test_a_batch_runs_through_the_mounted_coordinator(tmp_path: Path) -> None:
    sim = SimConfig(time_to_first_token=0.01, inter_token_latency=0.005, max_num_seqs=16)
    async with running_router(PLAIN, sim=sim, objectives=GUIDE_OBJECTIVES, scale=10.0) as rig:
        broker, quota = MemoryBroker(), MemoryQuotaStore()
        front = mount_coordinator(
            rig.app,
            coordinator_params(),
            broker=broker,
            quota_store=quota,
            clock=rig.clock,
            batch_stores=BatchStores(MemoryJobStore(), LocalFileStore(tmp_path)),
        )
        assert front.batches is not None
        await front.batches.start()
        processor = Processor(
            guide_spec(team_queues(rig.url), workers=4, poll_interval=0.2),
            broker,
            clock=rig.clock,
            registry=CollectorRegistry(),
            quota_store=lambda address: quota,
        )
        await processor.start()
        headers = {"x-llm-d-tenant": "standard"}
        api = openai.AsyncOpenAI(
            base_url=rig.base, api_key="-", max_retries=0, default_headers=headers
        )
        try:
            uploaded = await api.files.create(file=("in.jsonl", lines()), purpose="batch")
            batch = await api.batches.create(
                input_file_id=uploaded.id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
            )
            deadline = time.monotonic() + 60
            while (batch := await api.batches.retrieve(batch.id)).status != "completed":
                assert time.monotonic() < deadline, batch.status
                await asyncio.sleep(0.1)
            assert batch.request_counts is not None and batch.request_counts.completed == LINES
            assert batch.output_file_id is not None
            output = (await api.files.content(batch.output_file_id)).content
            answers = [json.loads(line) for line in output.splitlines()]
            assert sorted(a["custom_id"] for a in answers) == sorted(f"c{i}" for i in range(LINES))
            assert {a["response"]["body"]["object"] for a in answers} == {"chat.completion"}
        finally:
            await api.close()
            await processor.stop()
            await front.batches.aclose()
