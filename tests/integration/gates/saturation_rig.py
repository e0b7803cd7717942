"""A simulator scraped by a real Prometheus, and a processor whose pool gate reads it.

Everything runs at time scale 1 (Prometheus scrapes on wall time) with a 1 s scrape interval
and a cache TTL of 0 (the shared signal refreshes every second). The simulator reports each
request's start and end, so in-flight counts are exact, not sampled.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from sluiceway.broker.base import Claim
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.gates.context import SIGNALS_SERVICE
from sluiceway.localservices import PrometheusServer
from sluiceway.processor.headers import HeaderPolicy
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import MergeSpec, PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.signals.refresher import Refresher, SignalHub
from sluiceway.signals.settings import PrometheusSettings
from sluiceway.sim import SimConfig, SimPool, running_simulator
from sluiceway.wire import ResultRecord, decode_result
from sluiceway.wire.lanes import LANE_KEYS

OBJECTIVE = "x-llm-d-inference-objective"
POOL = "guide-pool"
RESULTS = "results-list"
WORKERS = 16
TEAMS = {"premium": ("interactive", 2), "standard": ("async", 2), "batch": ("batch", 1)}
SERVICE_TIME = 0.1 + 20 * 0.05  # TTFT + 20 tokens x ITL, wall seconds

SIM = SimConfig(
    max_num_seqs=64,
    time_to_first_token=0.1,
    inter_token_latency=0.05,
    label_headers=(OBJECTIVE,),
)


def sat_cap_query(sat_cap: int) -> str:
    """The guide's Scenario C budget."""
    running = f'sum(vllm:num_requests_running{{inference_pool="{POOL}"}})'
    return f"clamp(1 - {running}/{sat_cap}, 0, 1)"


def wait_on_refuse(gate_type: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"gate": json.dumps({"gate_type": gate_type, "gate_params": dict(params)})}


class CountingBroker(MemoryBroker):
    """Counts the calls that would hand a claimed entry back (broker churn)."""

    def __init__(self) -> None:
        super().__init__()
        self.releases = 0
        self.retries = 0

    async def release(self, claim: Claim) -> bool:
        self.releases += 1
        return await super().release(claim)

    async def retry_after(self, claim: Claim, *, member: str, due: float) -> bool:
        self.retries += 1
        return await super().retry_after(claim, member=member, due=due)


@dataclass
class Trace:
    """Every start and end the simulator saw: (wall time, +1/-1, lane)."""

    events: list[tuple[float, int, str]] = field(default_factory=list)

    def __call__(self, delta: int, labels: tuple[tuple[str, str], ...]) -> None:
        self.events.append((time.monotonic(), delta, dict(labels).get(OBJECTIVE, "")))

    def starts(self) -> list[tuple[float, str]]:
        return [(t, lane) for t, d, lane in self.events if d > 0]

    def in_flight(self) -> list[tuple[float, int]]:
        level, out = 0, []
        for t, delta, _ in self.events:
            level += delta
            out.append((t, level))
        return out

    def average(self, start: float, end: float) -> float:
        """Time-weighted mean of the in-flight count over [start, end]."""
        level, last, area = 0, start, 0.0
        for t, delta, _ in self.events:
            if t > start:
                area += level * (min(t, end) - last)
                last = min(t, end)
            if t >= end:
                break
            level += delta
        area += level * max(0.0, end - last)
        return area / (end - start)

    def peak(self, start: float, end: float) -> int:
        return max((n for t, n in self.in_flight() if start <= t <= end), default=0)


@dataclass
class Budgets:
    """Every value the shared signal took, with the wall time it was read."""

    values: list[tuple[float, float | None]] = field(default_factory=list)
    readable: asyncio.Event = field(default_factory=asyncio.Event)

    def watch(self, refresher: Refresher) -> None:
        def record() -> None:
            reading = refresher.peek()
            value = None if reading is None else reading.value
            self.values.append((time.monotonic(), value))
            if value is not None:
                self.readable.set()

        refresher.subscribe(record)

    async def wait_readable(self, refresher: Refresher, within: float = 30.0) -> None:
        """Until the signal has a value (Prometheus scraped the target at least once)."""
        await refresher.latest()
        await asyncio.wait_for(self.readable.wait(), within)

    def first(self, value: float) -> float | None:
        return next((t for t, v in self.values if v == value), None)


@dataclass
class Env:
    sim: SimPool
    prom: PrometheusServer
    trace: Trace
    clock: RealClock

    @property
    def sim_url(self) -> str:
        return self.sim.urls[0]


def trace_of(pool: SimPool) -> Trace:
    """A trace fed by the (single) simulator engine's start and end events."""
    trace = Trace()
    pool.engines[0].labels.subscribe(trace)
    return trace


@asynccontextmanager
async def sim_and_prometheus(
    prometheus_factory: Callable[..., PrometheusServer], sim: SimConfig = SIM
) -> AsyncIterator[Env]:
    clock = RealClock()
    async with running_simulator(sim, clock=clock) as pool:
        trace = trace_of(pool)
        target = pool.urls[0].removeprefix("http://")
        prom = prometheus_factory([target], target_labels={"inference_pool": POOL})
        yield Env(pool, prom, trace, clock)


def team_queues(url: str) -> list[QueueSpec]:
    return [
        QueueSpec(
            id=f"team-{team}",
            queue_name=f"team-{team}",
            igw_base_url=url,
            pool_id="teams",
            labels={"tier": tier},
            gate_type="redis-quota",
            gate_params={
                "attribute": "team",
                "mode": "concurrency",
                "limit": str(limit),
                "gating_mode": "classifying",
            },
        )
        for team, (tier, limit) in TEAMS.items()
    ]


def settings(
    url: str, prom_url: str, gate_type: str, gate_params: Mapping[str, Any]
) -> ProcessorSpec:
    merge = MergeSpec(
        ordering="tier-priority",
        headers=HeaderPolicy(stamp_lanes=True, lane_objectives={k: k for k in LANE_KEYS}),
    )
    return ProcessorSpec(
        queues=team_queues(url),
        pools=(PoolSpec("teams", WORKERS, gate_type, dict(gate_params)),),
        merge=merge,
        result_queue_name=RESULTS,
        poll_interval=0.5,
        backlog_interval=0,
        prometheus=PrometheusSettings(url=prom_url, cache_ttl=0),
    )


def processor(
    env: Env, config: ProcessorSpec, broker: MemoryBroker, membership: Any = None
) -> tuple[Processor, SignalHub, CollectorRegistry]:
    """A processor on ``broker``; ``membership`` (a ReplicaMembership) makes it one of
    several on the pool."""
    hub = SignalHub(env.clock, config.prometheus)
    registry = CollectorRegistry()
    proc = Processor(
        config,
        broker,
        clock=env.clock,
        registry=registry,
        services={SIGNALS_SERVICE: hub},
        membership=membership,
    )
    return proc, hub, registry


async def publish(broker: MemoryBroker, clock: RealClock, team: str, count: int) -> None:
    now = clock.now()
    entries = []
    for index in range(count):
        data = {
            "id": f"{team}-{index:04d}",
            "created": int(now),
            "deadline": now + 600,
            "payload": {"model": "sim-model", "prompt": "summarize this", "max_tokens": 20},
            "metadata": {"team": team},
        }
        member = json.dumps({"internal": {}, "request_kind": "plain", "data": data})
        entries.append((member, now + 600))
    await broker.enqueue(f"team-{team}", entries)


async def collect(broker: MemoryBroker, count: int, *, within: float) -> list[ResultRecord]:
    out: list[ResultRecord] = []
    end = time.monotonic() + within
    while len(out) < count:
        raw = await broker.pop_result(RESULTS, max(0.0, end - time.monotonic()))
        if raw is None:
            raise AssertionError(f"only {len(out)} of {count} results arrived")
        out.append(decode_result(raw))
    return out


def sample_value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(f"llm_d_async_async_{name}", labels)


async def wait_until(predicate: Callable[[], bool], *, within: float = 10.0) -> None:
    """Poll a condition that offers no event (a metric), bounded in wall time."""
    end = time.monotonic() + within
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)
