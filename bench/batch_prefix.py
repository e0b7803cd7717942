"""Prefix-cache hits of a batch whose lines share a few long system prompts, with the lines
grouped by system prompt and without.

Two simulated model servers with a small KV cache each, the router in front of them with the
``prefix-cache-scorer`` (a prompt goes to the endpoint that last served its prefix), the
coordinator mounted in it serving the Batch API, the processor (8 workers) sending the lines to
the router. The batch: ``--groups`` distinct system prompts of about 300 tokens, ``--per-group``
lines each, shuffled. Reported: the servers' prefix-cache hit rate (``vllm:prefix_cache_hits``
over ``queries``) and the batch's time to complete, grouped (the default) and in file order.

``python -m bench batch_prefix [--groups G] [--per-group N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import openai
from prometheus_client import CollectorRegistry

from sluiceway.batch.local_files import LocalFileStore
from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.stores import BatchStores
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.config.coordinator import load_coordinator_config
from sluiceway.config.documents import read_document
from sluiceway.config.router import load_endpoint_picker_config
from sluiceway.coordinator.server import mount_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.processor.guide_spec import guide_spec, team_queues
from sluiceway.processor.service import Processor
from sluiceway.router.build import build_router
from sluiceway.router.settings import RouterSettings
from sluiceway.serving import start_server
from sluiceway.sim import SimConfig, running_simulator

SCALE = 10.0
GUIDE = Path(__file__).parent.parent / "tests/fixtures/guide/coordinator-config.yaml"
PICKER = {
    "apiVersion": "llm-d.ai/v1",
    "kind": "EndpointPickerConfig",
    "plugins": [{"type": "queue-scorer"}, {"type": "prefix-cache-scorer"}],
    "schedulingProfiles": [
        {
            "name": "default",
            "plugins": [
                {"pluginRef": "queue-scorer", "weight": 1},
                {"pluginRef": "prefix-cache-scorer", "weight": 3},
            ],
        }
    ],
}
SIM = SimConfig(
    max_num_seqs=4,
    max_model_len=2048,
    num_gpu_blocks=96,  # 1,536 tokens: a few of the system prompts, not all
    time_to_first_token=0.02,
    prefill_time_per_token=0.0005,
    inter_token_latency=0.01,
)


def _lines(groups: int, per_group: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    words = [f"w{rng.randrange(10_000)}" for _ in range(300)]
    prompts = [
        f"You are assistant number {g}. " + " ".join(words[g:] + words[:g]) for g in range(groups)
    ]
    docs = [
        {
            "custom_id": f"g{g}-{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "sim-model",
                "max_tokens": 8,
                "messages": [
                    {"role": "system", "content": prompts[g]},
                    {"role": "user", "content": f"question {i}"},
                ],
            },
        }
        for g in range(groups)
        for i in range(per_group)
    ]
    rng.shuffle(docs)
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)


def _params(group: bool) -> Any:
    doc = read_document(str(GUIDE))
    params = doc["pipeline"]["steps"][0]["params"]
    params.update({"redis_url": "memory://", "batch": {"group_prompts": group}})
    return load_coordinator_config(doc).value.broker


async def _until_completed(api: openai.AsyncOpenAI, batch_id: str) -> None:
    while True:
        if (await api.batches.retrieve(batch_id)).status == "completed":
            return
        await asyncio.sleep(0.2)


async def _run_once(data: bytes, *, group: bool) -> tuple[float, float]:
    clock = RealClock(scale=SCALE)
    async with running_simulator(SIM, instances=2, clock=clock) as sim:
        picker = load_endpoint_picker_config(PICKER).value
        app, _ = build_router(picker, RouterSettings(endpoints=tuple(sim.urls)), clock)
        await app.gateway.start()
        server = await start_server(app, name="router")
        broker, quota = MemoryBroker(), MemoryQuotaStore()
        with tempfile.TemporaryDirectory() as folder:
            front = mount_coordinator(
                app,
                _params(group),
                broker=broker,
                quota_store=quota,
                clock=clock,
                batch_stores=BatchStores(MemoryJobStore(), LocalFileStore(Path(folder))),
            )
            assert front.batches is not None
            await front.batches.start()
            processor = Processor(
                guide_spec(team_queues(server.url), workers=8, poll_interval=0.2),
                broker,
                clock=clock,
                registry=CollectorRegistry(),
                quota_store=lambda address: quota,
            )
            headers = {"x-llm-d-tenant": "batch"}
            api = openai.AsyncOpenAI(
                base_url=server.url + "/v1", api_key="-", default_headers=headers
            )
            try:
                uploaded = await api.files.create(file=("in.jsonl", data), purpose="batch")
                batch = await api.batches.create(
                    input_file_id=uploaded.id,
                    endpoint="/v1/chat/completions",
                    completion_window="24h",
                )
                await asyncio.sleep(1.0)  # every line queued before the processor starts
                start = time.monotonic()
                await processor.start()
                await _until_completed(api, batch.id)
                took = (time.monotonic() - start) * SCALE
            finally:
                await api.close()
                await processor.stop()
                await front.batches.aclose()
                await server.stop()
                await app.gateway.aclose()
    hits = sum(e.stats.prefix_cache_hits for e in sim.engines)
    queries = sum(e.stats.prefix_cache_queries for e in sim.engines)
    return hits / max(1, queries), took


async def _run(groups: int, per_group: int) -> int:
    data = _lines(groups, per_group)
    grouped, grouped_s = await _run_once(data, group=True)
    plain, plain_s = await _run_once(data, group=False)
    print(f"{groups} system prompts x {per_group} lines, shuffled; 2 servers of 1,536 cached "
          f"tokens; time scale {SCALE:g}")  # fmt: skip
    print(f"grouped by system prompt: prefix-cache hit rate {grouped:.1%}, batch done in "
          f"{grouped_s:.1f} s")  # fmt: skip
    print(f"file order:               prefix-cache hit rate {plain:.1%}, batch done in "
          f"{plain_s:.1f} s")  # fmt: skip
    return 0 if grouped >= plain else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench batch_prefix")
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--per-group", type=int, default=30)
    args = parser.parse_args(argv)
    return asyncio.run(_run(args.groups, args.per_group))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
