"""Prefix resume end to end: the processor (``resume: true``) sends an overflow-batch completion
through the router to the simulator; a realtime request evicts it mid-stream; the processor
continues from the generated text (found in the simulator's prefix cache with the prompt) and
returns one stitched result whose usage sums both attempts. Without resume, the same eviction
restarts the completion from scratch."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from integration.router.router_harness import GUIDE_OBJECTIVES, fc_config, running_router, until
from sluiceway.broker.memory import MemoryBroker
from sluiceway.processor.producer import Producer, request
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.sim import SimConfig

RESULTS = "results-list"
TOKENS = 64
PROMPT = "tell a long story about " + " ".join(f"gate{i}" for i in range(26))  # 30 tokens
SIM = SimConfig(
    max_num_seqs=1,
    max_model_len=4096,
    time_to_first_token=0.02,
    inter_token_latency=0.02,
    label_headers=("x-request-id",),
)


def _spec(url: str, resume: bool) -> ProcessorSpec:
    queue = QueueSpec(
        id="q",
        queue_name="q",
        igw_base_url=url,
        inference_objective="overflow-batch",
        resume=resume,
    )
    return ProcessorSpec(
        queues=(queue,), pools=(PoolSpec(workers=1),), result_queue_name=RESULTS, poll_interval=0.1
    )


async def _evict_mid_stream(
    resume: bool,
) -> tuple[dict[str, Any], list[tuple[int, int, int, int]]]:
    """Run one async completion, evict it once it has generated some tokens; returns its
    result payload and every model attempt's (prompt tokens, max tokens, generated, cached)."""
    config = fc_config(max_concurrency=1, eviction=True)
    async with running_router(config, sim=SIM, objectives=GUIDE_OBJECTIVES, scale=5) as rig:
        engine = rig.sim.engines[0]
        attempts: list[Any] = []
        engine.labels.subscribe(
            lambda delta, labels: (
                attempts.append(engine.sequence(engine.running_ids()[-1])) if delta > 0 else None
            )
        )
        broker = MemoryBroker()
        producer = Producer(broker, result_queue=RESULTS, clock=rig.clock)
        body = {"model": "sim-model", "prompt": PROMPT, "max_tokens": TOKENS}
        body["ignore_eos"] = True
        await producer.submit(request("a1", body, deadline=rig.clock.now() + 600), queue="q")
        spec = _spec(rig.url, resume)
        async with Processor(spec, broker, clock=rig.clock, registry=CollectorRegistry()):
            await until(lambda: attempts and len(attempts[0].output) >= 10, what="first tokens")
            live = {"x-llm-d-inference-objective": "reserved-interactive"}
            async with aiohttp.ClientSession() as http:
                short = {"model": "sim-model", "prompt": "hi", "max_tokens": 2}
                async with http.post(rig.base + "/completions", json=short, headers=live) as r:
                    assert r.status == 200
            result = await producer.get_result(block_for=30)
    assert result is not None and result.status_code == 200, result
    seen = [
        (len(s.request.prompt), s.request.max_tokens, len(s.output), s.cached_tokens)
        for s in attempts
    ]
    return json.loads(result.payload), [a for a in seen if a[1] != 2]  # not the realtime one


@pytest.mark.serial
async def test_an_evicted_completion_resumes_from_its_text() -> None:
    payload, attempts = await _evict_mid_stream(resume=True)
    assert len(attempts) == 2
    (prompt1, max1, made1, _), (prompt2, max2, made2, cached2) = attempts
    kept = prompt2 - prompt1  # the prompt now carries the text the processor received
    assert 10 <= kept <= made1 < TOKENS  # tokens still on the wire when evicted are lost
    assert max1 == TOKENS and max2 == TOKENS - kept and made2 == max2
    assert cached2 == (prompt2 - 1) // SIM.block_size * SIM.block_size > prompt1  # output's too
    assert payload["usage"]["completion_tokens"] == TOKENS
    assert len(payload["choices"][0]["text"].split()) == TOKENS
    assert payload["choices"][0]["finish_reason"] == "length"
    assert "object" in payload and payload["object"] == "text_completion"


@pytest.mark.serial
async def test_without_resume_the_eviction_restarts_the_completion() -> None:
    payload, attempts = await _evict_mid_stream(resume=False)
    assert len(attempts) == 2
    assert attempts[1][0] == attempts[0][0] and attempts[1][1] == TOKENS  # same prompt, all tokens
    assert payload["usage"]["completion_tokens"] == TOKENS
