"""A router in front of simulated model servers, all in the test's event loop, on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from sluiceway.clock import RealClock
from sluiceway.config.coordinator import AsyncBrokerParams, load_coordinator_config
from sluiceway.config.documents import read_document
from sluiceway.config.objectives import load_objectives
from sluiceway.config.router import load_endpoint_picker_config
from sluiceway.router.app import RouterApp
from sluiceway.router.build import build_router
from sluiceway.router.gateway import Gateway
from sluiceway.router.objectives import ObjectiveTable, select_for_pool
from sluiceway.router.serve import Listen, serve_router
from sluiceway.router.settings import RouterSettings
from sluiceway.sim import SimConfig, SimPool, running_simulator

GUIDE_COORDINATOR = Path(__file__).parents[2] / "fixtures" / "guide" / "coordinator-config.yaml"
GUIDE_OBJECTIVES = {
    "reserved-interactive": 100,
    "reserved-async": 60,
    "reserved-batch": 30,
    "overflow-interactive": 10,
    "overflow-async": -5,
    "overflow-batch": -10,
}


def objective_docs(priorities: dict[str, int], pool: str = "pool") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "llm-d.ai/v1alpha2",
            "kind": "InferenceObjective",
            "metadata": {"name": name},
            "spec": {"priority": prio, "poolRef": {"name": pool}},
        }
        for name, prio in priorities.items()
    ]


def coordinator_params(**changes: Any) -> AsyncBrokerParams:
    """The guide's coordinator parameters on an in-process broker, with ``changes``."""
    doc = read_document(GUIDE_COORDINATOR)
    doc["pipeline"]["steps"][0]["params"].update({"redis_url": "memory://", **changes})
    return load_coordinator_config(doc).value.broker


def picker_config(text: str) -> Any:
    return load_endpoint_picker_config(yaml.safe_load(text)).value


@dataclass
class Rig:
    url: str
    sim: SimPool
    app: RouterApp
    clock: RealClock
    stop: asyncio.Event

    @property
    def gateway(self) -> Gateway:
        return self.app.gateway

    @property
    def base(self) -> str:
        return self.url + "/v1"


@contextlib.asynccontextmanager
async def running_router(
    config_yaml: str,
    *,
    sim: SimConfig | None = None,
    instances: int = 1,
    scale: float = 1.0,
    objectives: dict[str, int] | None = None,
    settings: dict[str, Any] | None = None,
) -> AsyncIterator[Rig]:
    clock = RealClock(scale)
    async with running_simulator(sim or SimConfig(), instances=instances, clock=clock) as pool:
        table = ObjectiveTable()
        if objectives:
            loaded = load_objectives(objective_docs(objectives)).value
            table.replace(select_for_pool(loaded, None).kept)
        rs = RouterSettings(endpoints=tuple(pool.urls), **(settings or {}))
        app, _ = build_router(picker_config(config_yaml), rs, clock, objectives=table)
        stop = asyncio.Event()
        async with serving_router(app, stop) as url:
            yield Rig(url, pool, app, clock, stop)


@contextlib.asynccontextmanager
async def serving_router(app: RouterApp, stop: asyncio.Event | None = None) -> AsyncIterator[str]:
    """``app`` served on a free loopback port until the block ends (or ``stop`` is set, which
    drains it); yields its URL."""
    stop = stop or asyncio.Event()
    bound: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        serve_router(app, Listen(port=0), stop=stop, on_bound=bound.set_result)
    )
    try:
        yield await asyncio.wait_for(bound, 10)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


@contextlib.asynccontextmanager
async def sim_process(
    folder: Path, *args: str, name: str = "sim"
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """``sluiceway sim`` as a child process (so it can be killed for real), with ``args`` after
    its fast default latencies: its URL, itself."""
    ports = folder / f"{name}-ports.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "sluiceway", "sim", "--port", "0", "--ports-file", str(ports)),
        *("--time-to-first-token", "5ms", "--inter-token-latency", "20ms", *args),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await until(lambda: ports.exists() or proc.returncode is not None, limit=30, what="sim")
        assert proc.returncode is None, "the simulator exited at start-up"
        yield next(iter(json.loads(ports.read_text()).values())), proc
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


FLOW_CONTROL = """
apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: concurrency-detector
  parameters: {{maxConcurrency: {max_concurrency}}}
- type: round-robin-fairness-policy
flowControl:
  defaultRequestTTL: {ttl}
  saturationDetector: {{pluginRef: concurrency-detector}}
  enableEviction: {eviction}
  defaultPriorityBand:
    {{fairnessPolicyRef: round-robin-fairness-policy, maxRequests: {band_max}}}
  defaultNegativePriorityBand:
    {{fairnessPolicyRef: round-robin-fairness-policy, maxRequests: {band_max}}}
"""


def fc_config(
    max_concurrency: int = 100, ttl: str = "60s", eviction: bool = False, band_max: int = 5000
) -> str:
    return FLOW_CONTROL.format(
        max_concurrency=max_concurrency,
        ttl=ttl,
        eviction=str(eviction).lower(),
        band_max=band_max,
    )


async def until(cond: Any, *, limit: float = 10.0, what: str = "condition") -> None:
    """Wait for a state check to hold (checked every few milliseconds), or fail."""
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


async def scrape(url: str) -> str:
    """The router's ``/metrics`` page."""
    async with aiohttp.ClientSession() as s, s.get(url + "/metrics") as r:
        return await r.text()


def sample(text: str, name: str, **labels: str) -> float:
    """The value of series ``name`` with ``labels`` on a metrics page (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return float(found.value)
    return 0.0


def queued(rig: Rig) -> int:
    controller = rig.gateway.controller
    assert controller is not None
    return controller.totals.queued


OBJECTIVE = "x-llm-d-inference-objective"
FAIRNESS = "x-llm-d-inference-fairness-id"


def body(max_tokens: int = 1, *, stream: bool = False, prompt: str = "hi") -> dict[str, Any]:
    return {"model": "sim-model", "prompt": prompt, "max_tokens": max_tokens, "stream": stream}


def ident(objective: str | None = None, tenant: str | None = None) -> dict[str, str]:
    out = {}
    if objective:
        out[OBJECTIVE] = objective
    if tenant:
        out[FAIRNESS] = tenant
    return out
