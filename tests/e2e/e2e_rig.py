"""Shared set-up for end-to-end runs on real Redis and the simulator.

Requests are observed where the model server sees them: :class:`SimLog` records each start and
end of a running request with its objective and fairness id, so tests can check "at most N in
flight" at every instant, not only at sampling times.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from sluiceway.broker import open_broker
from sluiceway.broker.base import Broker, BrokerOptions
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.clock import RealClock
from sluiceway.processor.guide_spec import GUIDE_TEAMS, guide_spec, team_quota
from sluiceway.processor.guide_spec import team_queues as team_queues
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import ProcessorSpec, QueueSpec
from sluiceway.sim import Engine
from sluiceway.wire import ResultRecord, decode_result

OBJECTIVE = "x-llm-d-inference-objective"
FAIRNESS = "x-llm-d-inference-fairness-id"
REQUEST_ID = "x-request-id"
RESULTS = "results-list"
TEAMS = GUIDE_TEAMS
quota_params = team_quota
guide_settings = guide_spec  # the guide's processor shape, shared with the harness and benches


@dataclass
class SimLog:
    """Start (+1) and end (-1) events of running requests at one simulated engine."""

    events: list[tuple[float, int, str, str]] = field(default_factory=list)
    started_ids: list[str] = field(default_factory=list)

    def attach(self, engine: Engine) -> None:
        engine.labels.subscribe(self._add)

    def _add(self, delta: int, pairs: tuple[tuple[str, str], ...]) -> None:
        found = dict(pairs)
        if delta > 0 and REQUEST_ID in found:
            self.started_ids.append(found[REQUEST_ID])
        self.events.append(
            (time.monotonic(), delta, found.get(OBJECTIVE, ""), found.get(FAIRNESS, ""))
        )

    def peak(self, *, objective: str | None = None, team: str | None = None) -> int:
        """Most requests running at once that match the objective and/or team."""
        running = best = 0
        for _, delta, obj, fid in self.events:
            if (objective is None or obj == objective) and (team is None or fid == team):
                running += delta
                best = max(best, running)
        return best

    def starts(self, *, objective: str | None = None, team: str | None = None) -> list[float]:
        return [
            t
            for t, delta, obj, fid in self.events
            if delta > 0 and objective in (None, obj) and team in (None, fid)
        ]

    def ends(self, *, team: str | None = None) -> list[float]:
        return [t for t, delta, _, fid in self.events if delta < 0 and team in (None, fid)]


def queue(name: str, url: str, tier: str, gate: Mapping[str, Any] | None) -> QueueSpec:
    return QueueSpec(
        id=name,
        queue_name=name,
        igw_base_url=url,
        pool_id="teams",
        labels={"tier": tier},
        gate_type="redis-quota" if gate else "",
        gate_params=dict(gate or {}),
    )


def guide_entry(team: str, index: int, *, now: float, ttl: float = 600) -> tuple[str, float]:
    """The guide's raw ``publish()`` member (``internal: {}``) and its score."""
    data = {
        "id": f"{team}-{index:04d}",
        "created": int(now),
        "deadline": now + ttl,
        "payload": {"model": "sim-model", "prompt": "summarize this", "max_tokens": 8},
        "metadata": {"team": team},
    }
    return json.dumps({"internal": {}, "request_kind": "plain", "data": data}), now + ttl


async def publish(broker: Broker, now: float, team: str, count: int, *, queue: str = "") -> None:
    entries = [guide_entry(team, i, now=now) for i in range(count)]
    await broker.enqueue(queue or f"team-{team}", entries)


async def collect(broker: Broker, count: int, *, within: float) -> list[ResultRecord]:
    """``count`` results; fails if they do not all arrive ``within`` wall seconds."""
    out: list[ResultRecord] = []
    end = time.monotonic() + within
    while len(out) < count:
        raw = await broker.pop_result(RESULTS, max(0.01, end - time.monotonic()))
        if raw is None:
            raise AssertionError(f"only {len(out)} of {count} results arrived")
        out.append(decode_result(raw))
    return out


@asynccontextmanager
async def redis_processor(
    settings: ProcessorSpec, url: str, clock: RealClock, *, transport: str = "redis-sortedset"
) -> AsyncIterator[tuple[Processor, Broker]]:
    """A processor on the Redis (or SQLite) broker with that transport's quota stores."""
    options = BrokerOptions(url=url, time_scale=clock.scale)
    broker = await open_broker(transport, options)
    stores = await open_quota_stores(transport, broker, options)
    try:
        async with Processor(
            settings, broker, clock=clock, registry=CollectorRegistry(), quota_store=stores
        ) as proc:
            yield proc, broker
    finally:
        await stores.aclose()
        await broker.aclose()
