"""The aimd pool gate end to end: a processor with more workers than the router lets in, whose
flow control answers ``429 rejected-saturated`` beyond two running and two queued requests.
The worker feeds each answer back to the gate, the window shrinks below the worker count,
and the processor draws far fewer rejections than the same processor without the gate."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from prometheus_client import CollectorRegistry
from router_harness import Rig, fc_config, running_router

from sluiceway.broker.memory import MemoryBroker
from sluiceway.gates.aimd import AimdGate
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.sim import SimConfig
from sluiceway.wire import decode_result

pytestmark = pytest.mark.serial  # the window follows wall-time overlaps

WORKERS = 8
REQUESTS = 40
SIM = SimConfig(time_to_first_token=0.1, inter_token_latency=0.05, max_num_seqs=8)
SHED = "llm_d_async_async_shedded_requests_total"


def _entries(now: float) -> list[tuple[str, float]]:
    out = []
    for i in range(REQUESTS):
        data = {
            "id": f"r-{i:03d}",
            "created": int(now),
            "deadline": now + 600,
            "payload": {"model": "sim-model", "prompt": "summarize this", "max_tokens": 16},
        }
        out.append((json.dumps({"internal": {}, "request_kind": "plain", "data": data}), now + 600))
    return out


@dataclass
class Run:
    """What one processor run saw: its 429s and, once the window was cut, its peak in flight."""

    rejected: float = 0.0
    peak_after_cut: int = 0
    statuses: set[int | None] = field(default_factory=set)


@asynccontextmanager
async def _watching(gate: AimdGate | None, run: Run) -> AsyncIterator[None]:
    """Sample the window's in-flight count after its first cut (no event says when it moves)."""

    async def watch() -> None:
        while gate is not None:
            if gate.window.cuts:
                run.peak_after_cut = max(run.peak_after_cut, gate.window.in_flight)
            await asyncio.sleep(0.001)

    task = asyncio.create_task(watch())
    try:
        yield
    finally:
        task.cancel()


async def _run(rig: Rig, gate_type: str) -> tuple[Run, AimdGate | None]:
    broker, run = MemoryBroker(), Run()
    queue = QueueSpec(id="q", queue_name="q", igw_base_url=rig.url, pool_id="p")
    pool = PoolSpec(id="p", workers=WORKERS, gate_type=gate_type)
    settings = ProcessorSpec(queues=(queue,), pools=(pool,), result_queue_name="results")
    await broker.enqueue("q", _entries(rig.clock.now()))
    registry = CollectorRegistry()
    async with Processor(settings, broker, clock=rig.clock, registry=registry) as processor:
        gate = processor.pools["p"].gate
        assert gate is None or isinstance(gate, AimdGate)
        async with _watching(gate, run):
            for _ in range(REQUESTS):
                raw = await broker.pop_result("results", 60)
                assert raw is not None, "a result did not arrive"
                run.statuses.add(decode_result(raw).status_code)
    run.rejected = (
        registry.get_sample_value(SHED, {"queue_id": "q", "queue_name": "q", "pool_name": "p"})
        or 0.0
    )
    return run, gate


async def test_rejections_shrink_the_window_and_the_processor_sends_fewer_in_flight() -> None:
    async with running_router(fc_config(max_concurrency=2, band_max=2), sim=SIM, scale=20) as rig:
        plain, _ = await _run(rig, "")
        windowed, gate = await _run(rig, "aimd")
    assert plain.statuses == windowed.statuses == {200}
    assert gate is not None
    assert gate.window.cuts >= 1 and gate.window.ssthresh < WORKERS
    assert 0 < windowed.peak_after_cut < WORKERS  # the window holds fewer than the workers
    assert plain.rejected >= 10
    assert windowed.rejected < plain.rejected / 2
