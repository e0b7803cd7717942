"""The whole system in one process: simulator, router, coordinator and processor on loopback.

The simulated pool sits behind the router (flow control, from the guide's router values);
the coordinator is mounted in the router's listener and passes live requests to the router's
handler in process, as ``sluiceway router --coordinator-config`` does; the processor reads the
team queues from the broker (memory, or Redis with ``--redis``) and dispatches to the router.
Every request a step sends enters through the coordinator's URL, as the guide's clients do.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, cast

import yaml
from prometheus_client import CollectorRegistry

from sluiceway.batch.stores import BatchStores
from sluiceway.broker import open_broker
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.quota_stores import QuotaStores, open_quota_stores
from sluiceway.clock import Clock
from sluiceway.config.coordinator import load_coordinator_config
from sluiceway.config.router import load_endpoint_picker_config
from sluiceway.coordinator.server import mount_coordinator
from sluiceway.demo.observe import HandbackCounter, Timeline
from sluiceway.gates.context import SIGNALS_SERVICE
from sluiceway.processor.guide_spec import GUIDE_POOL, guide_spec, team_queues
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec
from sluiceway.router.app import RouterApp
from sluiceway.router.build import build_router
from sluiceway.router.objective_files import apply_objectives
from sluiceway.router.objectives import ObjectiveTable
from sluiceway.router.settings import RouterSettings
from sluiceway.serving import start_server
from sluiceway.signals.refresher import SignalHub
from sluiceway.signals.settings import PrometheusSettings
from sluiceway.sim import SimConfig, SimPool, running_simulator
from sluiceway.wire.headers import FAIRNESS_ID, OBJECTIVE, REQUEST_ID

__all__ = [
    "POOL_NAME",
    "DemoStack",
    "StackSpec",
    "check_broker",
    "data_text",
    "router_document",
    "running_demo_stack",
]

POOL_NAME = "llm-d-router"


def data_text(name: str) -> str:
    """A file shipped with the demo (the guide's router values, objectives, coordinator)."""
    return resources.files("sluiceway.demo").joinpath(name).read_text(encoding="utf-8")


def router_document(values_file: str, **flow_changes: Any) -> dict[str, Any]:
    """The ``EndpointPickerConfig`` inside one of the guide's router values files, with
    ``flow_changes`` merged into its ``flowControl`` section (``maxConcurrency`` goes to the
    concurrency detector)."""
    values = yaml.safe_load(data_text(values_file))
    epp = values["router"]["epp"]
    doc: dict[str, Any] = yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])
    limit = flow_changes.pop("maxConcurrency", None)
    if limit is not None:
        for plugin in doc["plugins"]:
            if plugin["type"] == "concurrency-detector":
                plugin.setdefault("parameters", {})["maxConcurrency"] = limit
    doc["flowControl"].update(flow_changes)
    return doc


@dataclass(frozen=True)
class StackSpec:
    """What one step needs: the router's configuration, the processor's pool size and gate."""

    router: Mapping[str, Any] = field(
        default_factory=lambda: router_document("router-evictable.yaml")
    )
    workers: int = 16
    # the pool gate, given the router's URL: (gate_type, gate_params)
    pool_gate: Callable[[str], tuple[str, Mapping[str, object]]] | None = None
    signal_period: float = 0.0  # how often shared signals refresh (0: the default period)


@dataclass
class DemoStack:
    """The running parts a step drives and observes."""

    url: str  # the router's listener; the coordinator is mounted on it
    sim: SimPool
    router: RouterApp
    broker: Broker
    quota: QuotaStores
    processor: Processor
    signals: SignalHub
    registry: CollectorRegistry
    timeline: Timeline
    clock: Clock
    handbacks: HandbackCounter
    _started: bool = False

    @property
    def base(self) -> str:
        """Where an ``openai`` client points (``base_url``)."""
        return self.url + "/v1"

    async def start_processor(self) -> None:
        """Start pulling the team queues (steps queue first when order matters)."""
        if not self._started:
            self._started = True
            await self.processor.start()

    def router_load(self) -> tuple[int, int]:
        """Requests in flight and queued in the router's flow control."""
        controller = self.router.gateway.controller
        if controller is None:
            return 0, 0
        return controller.totals.inflight, controller.totals.queued

    def signal_value(self) -> float | None:
        """The last value the pool gate's signal read (None before the first, or blind)."""
        for refresher in self.signals.refreshers.values():
            reading = refresher.peek()
            return None if reading is None else reading.value
        return None

    async def read_signal(self) -> float | None:
        """Make the pool gate's signal read its source now; the value read."""
        for refresher in self.signals.refreshers.values():
            return (await refresher.refresh()).value
        return None

    def evictions_issued(self) -> int:
        controller = self.router.gateway.controller
        return 0 if controller is None else controller.evictor.issued

    async def quota_count(self, team: str) -> int:
        return await self.quota("").count(f"quota:team:{team}")


def _coordinator_params(redis_url: str | None) -> Any:
    doc = yaml.safe_load(data_text("coordinator.yaml"))
    params = doc["pipeline"]["steps"][0]["params"]
    params.update({"redis_url": redis_url or "memory://", "fetch_grace_seconds": 0})
    return load_coordinator_config(doc).value.broker


def _objectives() -> ObjectiveTable:
    table = ObjectiveTable()
    with resources.as_file(resources.files("sluiceway.demo").joinpath("objectives.yaml")) as p:
        apply_objectives(Path(p), table, POOL_NAME)
    return table


@contextlib.asynccontextmanager
async def _serving(app: RouterApp) -> AsyncIterator[str]:
    """The router on a free loopback port, quietly (the demo prints its own URLs)."""
    await app.gateway.start()
    try:
        server = await start_server(app, name="router", graceful_timeout=1)
        try:
            yield server.url
        finally:
            await app.drain()
            await server.stop()
    finally:
        await app.gateway.aclose()


async def _open_broker(redis_url: str | None, clock: Clock) -> tuple[Broker, QuotaStores]:
    transport = "redis-sortedset" if redis_url else "memory"
    options = BrokerOptions(url=redis_url, time_scale=clock.scale)
    broker = await open_broker(transport, options)
    try:
        return broker, await open_quota_stores(transport, broker, options)
    except BaseException:
        await broker.aclose()
        raise


async def check_broker(redis_url: str | None, clock: Clock) -> None:
    """Open and close the broker once, so an unreachable Redis fails before any step."""
    broker, quota = await _open_broker(redis_url, clock)
    try:
        await broker.ping()
    finally:
        await quota.aclose()
        await broker.aclose()


@contextlib.asynccontextmanager
async def running_demo_stack(
    spec: StackSpec,
    *,
    clock: Clock,
    redis_url: str | None = None,
    batch_stores: BatchStores | None = None,
) -> AsyncIterator[DemoStack]:
    """Everything up on loopback for one step; the processor starts when the step says.
    ``batch_stores``: the coordinator also serves the Batch API over them."""
    sim_config = SimConfig.from_profile(
        "guide-pool", label_headers=(OBJECTIVE, FAIRNESS_ID, REQUEST_ID)
    )
    picker = load_endpoint_picker_config(dict(spec.router)).value
    async with running_simulator(sim_config, clock=clock) as sim, contextlib.AsyncExitStack() as st:
        settings = RouterSettings(endpoints=tuple(sim.urls), pool_name=POOL_NAME, drain_timeout=1.0)
        app, _ = build_router(picker, settings, clock, objectives=_objectives())
        url = await st.enter_async_context(_serving(app))
        broker, quota = await _open_broker(redis_url, clock)
        st.push_async_callback(broker.aclose)
        st.push_async_callback(quota.aclose)
        front = mount_coordinator(
            app,
            _coordinator_params(redis_url),
            broker=broker,
            quota_store=quota(""),
            clock=clock,
            batch_stores=batch_stores,
        )
        if front.batches is not None:
            await front.batches.start()
            st.push_async_callback(front.batches.aclose)
        signals = SignalHub(clock, PrometheusSettings(cache_ttl=spec.signal_period))
        st.push_async_callback(signals.aclose)
        registry = CollectorRegistry()
        handbacks = HandbackCounter(broker)
        processor = Processor(
            _processor_spec(url, spec),
            cast(Broker, handbacks),
            clock=clock,
            registry=registry,
            quota_store=quota,
            services={SIGNALS_SERVICE: signals},
        )
        timeline = Timeline(clock)
        st.enter_context(timeline.recording(sim.engines[0]))
        stack = DemoStack(
            url, sim, app, broker, quota, processor, signals, registry, timeline, clock, handbacks
        )
        try:
            yield stack
        finally:
            if stack._started:
                await processor.stop()


def _processor_spec(router_url: str, spec: StackSpec) -> Any:
    gate_type, gate_params = spec.pool_gate(router_url) if spec.pool_gate else ("", {})
    pool = PoolSpec(GUIDE_POOL, spec.workers, gate_type, dict(gate_params))
    return guide_spec(
        team_queues(router_url),
        pools=(pool,),
        poll_interval=0.5,
        prometheus=PrometheusSettings(cache_ttl=0),
    )
