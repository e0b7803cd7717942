"""A coordinator serving the Batch API in front of the simulator, a processor draining its
queues (in process), and helpers to write input files and read output files."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from sluiceway.batch.base import FileStore, JobStore
from sluiceway.batch.local_files import LocalFileStore
from sluiceway.batch.memory_jobs import MemoryJobStore
from sluiceway.batch.service import BatchService
from sluiceway.batch.stores import BatchStores
from sluiceway.broker.base import Broker
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import Clock, RealClock
from sluiceway.config.coordinator import load_coordinator_config
from sluiceway.config.documents import read_document
from sluiceway.coordinator.app import Coordinator
from sluiceway.coordinator.forwarding import HttpForwarder
from sluiceway.coordinator.server import build_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore, QuotaStore
from sluiceway.processor.guide_spec import guide_spec, team_queues
from sluiceway.processor.service import Processor
from sluiceway.serving import start_server
from sluiceway.sim import SimConfig, SimPool, running_simulator

GUIDE_CONFIG = "tests/fixtures/guide/coordinator-config.yaml"
SCALE = 10.0
MODEL = "sim-model"


def guide_params(**changes: Any) -> Any:
    doc = read_document(GUIDE_CONFIG)
    step = doc["pipeline"]["steps"][0]["params"]
    step.update({"redis_url": "memory://", "fetch_grace_seconds": 0, **changes})
    return load_coordinator_config(doc).value.broker


def input_lines(count: int, *, url: str = "/v1/completions", max_tokens: int = 4) -> bytes:
    """A batch input file of ``count`` completion lines, custom ids ``req-<i>``."""
    lines = [
        {
            "custom_id": f"req-{i}",
            "method": "POST",
            "url": url,
            "body": {"model": MODEL, "prompt": f"line {i}", "max_tokens": max_tokens},
        }
        for i in range(count)
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def read_lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


@dataclass
class BatchFront:
    url: str
    sim: SimPool
    broker: Broker
    coordinator: Coordinator
    processor: Processor
    clock: Clock
    jobs: JobStore
    files: Path

    @property
    def batches(self) -> BatchService:
        assert self.coordinator.batches is not None
        return self.coordinator.batches


def fast_sim() -> SimConfig:
    return SimConfig(max_num_seqs=64, time_to_first_token=0.05, inter_token_latency=0.02)


@contextlib.asynccontextmanager
async def running_batch_front(
    files: Path,
    *,
    broker: Broker | None = None,
    jobs: JobStore | None = None,
    quota_store: QuotaStore | None = None,
    start_processor: bool = True,
    workers: int = 8,
    sim_config: SimConfig | None = None,
    processor_factory: Callable[..., Processor] = Processor,
    file_store: FileStore | None = None,
    **params: Any,
) -> AsyncIterator[BatchFront]:
    clock = RealClock(scale=SCALE)
    broker = broker or MemoryBroker()
    jobs = jobs or MemoryJobStore()
    store = quota_store or MemoryQuotaStore()
    async with (
        running_simulator(sim_config or fast_sim(), clock=clock) as sim,
        contextlib.AsyncExitStack() as stack,
    ):
        forwarder = HttpForwarder(sim.urls[0], timeout=60)
        stack.push_async_callback(forwarder.aclose)
        coordinator = build_coordinator(
            guide_params(**params),
            broker=broker,
            quota_store=store,
            forwarder=forwarder,
            clock=clock,
            batch_stores=BatchStores(jobs, file_store or LocalFileStore(files)),
        )
        processor = processor_factory(
            guide_spec(team_queues(sim.urls[0]), workers=workers, poll_interval=0.2),
            broker,
            clock=clock,
            registry=CollectorRegistry(),
            quota_store=lambda address: store,
        )
        server = await start_server(coordinator.app(), name="coordinator")
        stack.push_async_callback(server.stop)
        assert coordinator.batches is not None
        await coordinator.batches.start()
        stack.push_async_callback(coordinator.batches.aclose)
        if start_processor:
            await processor.start()
            stack.push_async_callback(processor.stop)
        yield BatchFront(server.url, sim, broker, coordinator, processor, clock, jobs, files)
