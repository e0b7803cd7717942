"""Shared set-up for processor integration tests: the guide's three teams on the simulator."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from prometheus_client import CollectorRegistry

from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.processor.guide_spec import GUIDE_TEAMS, guide_spec, team_quota
from sluiceway.processor.guide_spec import team_queues as team_queues
from sluiceway.processor.outcome import RetryPolicy
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import ProcessorSpec, QueueSpec
from sluiceway.sim import SimConfig, SimPool, running_simulator
from sluiceway.wire import ResultRecord, decode_result

OBJECTIVE = "x-llm-d-inference-objective"
FAIRNESS = "x-llm-d-inference-fairness-id"
RESULTS = "results-list"
SCALE = 20.0
TEAMS = GUIDE_TEAMS
quota = team_quota
guide_settings = guide_spec  # the guide's processor shape, shared with the e2e rig and benches


def guide_entry(
    team: str,
    index: int,
    *,
    now: float,
    ttl: float = 300,
    headers: Mapping[str, str] | None = None,
    max_tokens: int = 8,
    run: str = "r",
) -> tuple[str, float]:
    """The guide's ``publish()`` member (``internal: {}``) and its score."""
    data: dict[str, Any] = {
        "id": f"{team}-{run}-{index:04d}",
        "created": int(now),
        "deadline": now + ttl,
        "payload": {"model": "sim-model", "prompt": "summarize this", "max_tokens": max_tokens},
        "metadata": {"team": team},
    }
    if headers:
        data["headers"] = dict(headers)
    member = json.dumps({"internal": {}, "request_kind": "plain", "data": data})
    return member, now + ttl


async def publish(
    broker: MemoryBroker, clock: RealClock, team: str, count: int, **kw: Any
) -> list[str]:
    now = clock.now()
    entries = [guide_entry(team, i, now=now, **kw) for i in range(count)]
    await broker.enqueue(f"team-{team}", entries)
    return [json.loads(m)["data"]["id"] for m, _ in entries]


async def collect(
    broker: MemoryBroker, count: int, *, within: float = 20.0, destination: str = RESULTS
) -> list[ResultRecord]:
    """``count`` results, oldest first; fails the test if they do not arrive ``within`` wall s."""
    out: list[ResultRecord] = []
    end = time.monotonic() + within
    while len(out) < count:
        remaining = end - time.monotonic()
        raw = await broker.pop_result(destination, max(0.0, remaining))
        if raw is None:
            raise AssertionError(f"only {len(out)} of {count} results arrived: {out}")
        out.append(decode_result(raw))
    return out


@dataclass
class Rig:
    broker: MemoryBroker
    clock: RealClock
    sim: SimPool
    url: str


@asynccontextmanager
async def rig(sim_config: SimConfig | None = None, *, scale: float = SCALE) -> AsyncIterator[Rig]:
    clock = RealClock(scale=scale)
    config = sim_config or SimConfig(
        max_num_seqs=8,
        time_to_first_token=0.05,
        inter_token_latency=0.02,
        label_headers=(OBJECTIVE, FAIRNESS),
    )
    async with running_simulator(config, instances=1, clock=clock) as sim:
        yield Rig(MemoryBroker(), clock, sim, sim.urls[0])


def processor(r: Rig, settings: ProcessorSpec) -> Processor:
    return Processor(settings, r.broker, clock=r.clock, registry=CollectorRegistry())


def with_retry(queues: Sequence[QueueSpec], policy: RetryPolicy) -> list[QueueSpec]:
    return [replace(q, retry=policy) for q in queues]


async def wait_until(predicate: Callable[[], bool], *, within: float = 10.0) -> None:
    """Poll a condition of the simulator (which offers no event for it), bounded in wall time."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)  # the simulator exposes no event to await
