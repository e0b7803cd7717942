"""One mode's system in this process: the simulator (or real model servers), the router with
the coordinator mounted in it, and the processor draining the coordinator's queues, as the
nightly topology wires them (coordinator -> router for realtime; coordinator -> queue ->
processor -> router for async).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry

from sluiceway.bench.isolation.modes import OBJECTIVES, ModeSpec
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import Clock
from sluiceway.config.coordinator import load_coordinator_config
from sluiceway.config.objectives import load_objectives
from sluiceway.config.router import load_endpoint_picker_config
from sluiceway.coordinator.server import mount_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.processor.guide_spec import GUIDE_POOL, guide_spec, team_queues
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, ProcessorSpec
from sluiceway.router.app import RouterApp
from sluiceway.router.build import build_router
from sluiceway.router.objectives import ObjectiveTable, select_for_pool
from sluiceway.router.serve import Listen, serve_router
from sluiceway.router.settings import RouterSettings
from sluiceway.sim import Engine, SimConfig, running_simulator

__all__ = [
    "PROCESSOR_WORKERS",
    "Stack",
    "coordinator_document",
    "model_servers",
    "objective_documents",
    "processor_spec",
    "running_stack",
]

PROCESSOR_WORKERS = 16  # the guide's ``teams`` pool
_REQUEST_ID = "x-request-id"


def coordinator_document(broker_url: str = "memory://") -> dict[str, Any]:
    """The guide's coordinator routes and objectives on ``broker_url`` (a bare async-broker
    parameter block: what a coordinator file's step holds)."""
    tiers = ("interactive", "async", "batch")
    return {
        "redis_url": broker_url,
        "routes": [
            {"tenant": "realtime", "tier": "interactive"},
            {"tenant": "batch", "queue": "team-batch", "tier": "batch"},
        ],
        "default_queue": "team-batch",
        "default_tier": "batch",
        "objectives": {
            t: {"reserved": f"reserved-{t}", "overflow": f"overflow-{t}"} for t in tiers
        },
        "quota": {"prefix": "quota:", "attribute": "team", "limits": {"batch": 1}},
        "timeouts": {"wait": {"default_seconds": 300, "max_seconds": 600}},
        "fetch_grace_seconds": 0,
    }


def coordinator_params() -> Any:
    """The guide's coordinator on the in-process memory broker."""
    return load_coordinator_config(coordinator_document()).value.broker


def objective_documents() -> list[dict[str, Any]]:
    """One InferenceObjective per lane (and realtime), for the guide's pool."""
    return [
        {
            "apiVersion": "llm-d.ai/v1alpha2",
            "kind": "InferenceObjective",
            "metadata": {"name": name},
            "spec": {"priority": prio, "poolRef": {"name": "llm-d-router"}},
        }
        for name, prio in OBJECTIVES.items()
    ]


def _objectives() -> ObjectiveTable:
    table = ObjectiveTable()
    table.replace(select_for_pool(load_objectives(objective_documents()).value, None).kept)
    return table


@dataclass
class Stack:
    """A running system: where clients send, the engines (simulator only), the router (in
    process), or the router replicas' URLs (processes: clients take them in turn, and their
    ``/metrics`` are read for the band counts)."""

    url: str
    model: str
    engines: list[Engine]
    endpoints: tuple[str, ...]
    router: RouterApp | None
    replicas: tuple[str, ...] = ()

    @property
    def registry(self) -> CollectorRegistry:
        if self.router is None:
            return CollectorRegistry()
        return self.router.gateway.metrics.registry


async def served_model(url: str) -> str:
    """The first model a real model server lists at ``/v1/models``."""
    async with aiohttp.ClientSession() as http, http.get(url + "/v1/models") as resp:
        resp.raise_for_status()
        data = await resp.json()
    return str(data["data"][0]["id"])


@contextlib.asynccontextmanager
async def model_servers(
    endpoints: tuple[str, ...], capacity: int, clock: Clock
) -> AsyncIterator[tuple[tuple[str, ...], list[Engine], str]]:
    if endpoints:
        yield endpoints, [], await served_model(endpoints[0])
        return
    config = SimConfig.from_profile(
        "guide-pool", max_num_seqs=capacity, label_headers=(_REQUEST_ID,)
    )
    async with running_simulator(config, clock=clock) as sim:
        yield tuple(sim.urls), sim.engines, config.model


@contextlib.asynccontextmanager
async def running_stack(
    mode: ModeSpec, *, capacity: int, clock: Clock, endpoints: tuple[str, ...] = (), model: str = ""
) -> AsyncIterator[Stack]:
    """Start everything for ``mode``; stop it all on exit."""
    async with model_servers(endpoints, capacity, clock) as (urls, engines, sim_model):
        picker = load_endpoint_picker_config(mode.router).value
        app, _ = build_router(
            picker, RouterSettings(endpoints=urls), clock, objectives=_objectives()
        )
        broker, store = MemoryBroker(), MemoryQuotaStore()
        params = coordinator_params()
        mount_coordinator(app, params, broker=broker, quota_store=store, clock=clock)
        stop = asyncio.Event()
        bound: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        server = asyncio.create_task(
            serve_router(app, Listen(port=0), stop=stop, on_bound=bound.set_result)
        )
        try:
            url = await asyncio.wait_for(bound, 30)
            processor = Processor(
                processor_spec(mode, url),
                broker,
                clock=clock,
                registry=CollectorRegistry(),
                quota_store=lambda _: store,
            )
            async with processor:
                yield Stack(url, model or sim_model, engines, urls, app)
        finally:
            stop.set()
            await asyncio.wait_for(server, 60)


def processor_spec(mode: ModeSpec, router_url: str) -> ProcessorSpec:
    """The guide's processor for ``mode``, dispatching to ``router_url``."""
    queues = [replace(q, **_resume(mode)) for q in team_queues(router_url)]
    gate_type, gate_params = mode.pool_gate
    pool = PoolSpec(GUIDE_POOL, PROCESSOR_WORKERS, gate_type, dict(gate_params))
    return guide_spec(queues, pools=(pool,), poll_interval=0.5, **mode.processor)


def _resume(mode: ModeSpec) -> dict[str, Any]:
    return {"resume": True} if mode.resume else {}
