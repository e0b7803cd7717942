"""A coordinator in front of the simulator, with a processor draining its queues (in process)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

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
from sluiceway.wire.headers import FAIRNESS_ID as FAIRNESS
from sluiceway.wire.headers import OBJECTIVE

GUIDE_CONFIG = "tests/fixtures/guide/coordinator-config.yaml"
SCALE = 10.0


def guide_params(**changes: Any) -> Any:
    doc = read_document(GUIDE_CONFIG)
    step = doc["pipeline"]["steps"][0]["params"]
    step.update({"redis_url": "memory://", "fetch_grace_seconds": 0, **changes})
    return load_coordinator_config(doc).value.broker


@dataclass
class Front:
    url: str
    sim: SimPool
    broker: Broker
    coordinator: Coordinator
    processor: Processor
    clock: Clock
    seen: list[dict[str, str]] = field(default_factory=list)  # labels of every model start


@contextlib.asynccontextmanager
async def running_front(
    *,
    broker: Broker | None = None,
    quota_store: QuotaStore | None = None,
    start_processor: bool = True,
    sim_config: SimConfig | None = None,
    max_body_bytes: int = 10 * 1024 * 1024,
    **params: Any,
) -> AsyncIterator[Front]:
    clock = RealClock(scale=SCALE)
    broker = broker or MemoryBroker()
    store = quota_store or MemoryQuotaStore()
    config = sim_config or SimConfig(
        max_num_seqs=8,
        time_to_first_token=0.05,
        inter_token_latency=0.02,
        label_headers=(OBJECTIVE, FAIRNESS),
    )
    async with running_simulator(config, clock=clock) as sim, contextlib.AsyncExitStack() as stack:
        forwarder = HttpForwarder(sim.urls[0], timeout=60)
        stack.push_async_callback(forwarder.aclose)
        coordinator = build_coordinator(
            guide_params(**params),
            broker=broker,
            quota_store=store,
            forwarder=forwarder,
            clock=clock,
            max_body_bytes=max_body_bytes,
        )
        processor = Processor(
            guide_spec(team_queues(sim.urls[0]), workers=4),
            broker,
            clock=clock,
            registry=CollectorRegistry(),
            quota_store=lambda address: store,
        )
        server = await start_server(coordinator.app(), name="coordinator")
        stack.push_async_callback(server.stop)
        front = Front(server.url, sim, broker, coordinator, processor, clock)
        sim.engines[0].labels.subscribe(
            lambda delta, labels: front.seen.append(dict(labels)) if delta > 0 else None
        )
        if start_processor:
            await processor.start()
            stack.push_async_callback(processor.stop)
        yield front
