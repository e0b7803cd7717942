"""Set-up shared by the Pub/Sub tests: topics and subscriptions on the emulator, publishing
requests as the guide's producers do (the plain request object, team as an attribute), and
reading results from a subscription on the result topic."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.pubsub import PubSubBroker, open_pubsub_broker
from sluiceway.broker.pubsub_api import GrpcPubSub
from sluiceway.clock import Clock
from sluiceway.processor.headers import HeaderPolicy
from sluiceway.processor.specs import MergeSpec, PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.wire import ResultRecord, decode_result
from sluiceway.wire.lanes import LANE_KEYS

PROJECT = "sluiceway-test"
TEAMS = {"premium": ("interactive", 2), "standard": ("async", 2), "batch": ("batch", 1)}
OBJECTIVE = "x-llm-d-inference-objective"
FAIRNESS = "x-llm-d-inference-fairness-id"


@dataclass
class Topics:
    """One test's topics: a request topic and subscription per team, and the result topic
    with a subscription the test reads results from."""

    run: str
    api: GrpcPubSub = field(default_factory=GrpcPubSub)

    def request_topic(self, team: str) -> str:
        return f"projects/{PROJECT}/topics/{self.run}-{team}"

    def subscription(self, team: str) -> str:
        return f"{self.run}-{team}-sub"

    @property
    def result_topic(self) -> str:
        return f"{self.run}-results"

    @property
    def result_subscription(self) -> str:
        return f"projects/{PROJECT}/subscriptions/{self.run}-results-sub"

    async def create(self, teams: Sequence[str], *, ack_deadline: int = 10) -> None:
        result_topic = f"projects/{PROJECT}/topics/{self.result_topic}"
        await self.api.create_topic(result_topic)
        await self.api.create_subscription(self.result_subscription, result_topic)
        for team in teams:
            await self.api.create_topic(self.request_topic(team))
            await self.api.create_subscription(
                f"projects/{PROJECT}/subscriptions/{self.subscription(team)}",
                self.request_topic(team),
                ack_deadline_seconds=ack_deadline,
            )

    async def publish_raw(
        self, team: str, bodies: Sequence[bytes], attributes: Mapping[str, str] | None = None
    ) -> list[str]:
        messages = [(body, dict(attributes or {})) for body in bodies]
        return await self.api.publish(self.request_topic(team), messages)

    async def publish(
        self, team: str, count: int, *, now: float, ttl: float = 300, max_tokens: int = 8
    ) -> list[str]:
        """``count`` requests of ``team`` (ids ``<team>-<n>``); the team travels as an
        attribute, which the processor merges into metadata."""
        bodies = [
            json.dumps(request_body(f"{team}-{i:04d}", now=now, ttl=ttl, max_tokens=max_tokens))
            for i in range(count)
        ]
        await self.publish_raw(team, [b.encode() for b in bodies], {"team": team})
        return [f"{team}-{i:04d}" for i in range(count)]

    async def results(self, count: int, *, within: float = 30.0) -> list[ResultRecord]:
        """``count`` results from the result topic; fails if they do not arrive ``within``."""
        out: list[ResultRecord] = []
        end = time.monotonic() + within
        while len(out) < count:
            if time.monotonic() > end:
                raise AssertionError(f"only {len(out)} of {count} results arrived: {out}")
            got = await self.api.pull(self.result_subscription, 100, wait=2.0)
            if got:
                await self.api.acknowledge(self.result_subscription, [m.ack_id for m in got])
            out.extend(decode_result(m.data) for m in got)
        return out

    async def drain_results(self, *, quiet_for: float = 2.0) -> list[ResultRecord]:
        """Every result still waiting, until a pull of ``quiet_for`` seconds finds none."""
        out: list[ResultRecord] = []
        while got := await self.api.pull(self.result_subscription, 100, wait=quiet_for):
            await self.api.acknowledge(self.result_subscription, [m.ack_id for m in got])
            out.extend(decode_result(m.data) for m in got)
        return out

    def transport_settings(self, teams: Sequence[str], **extra: Any) -> dict[str, Any]:
        return {
            "project_id": PROJECT,
            "result_topic_id": self.result_topic,
            "batch_size": 10,
            "claim_lease_ttl_seconds": 30,
            "topics": [{"subscriber_id": self.subscription(t)} for t in teams],
            **extra,
        }

    async def broker(self, teams: Sequence[str], clock: Clock, **extra: Any) -> PubSubBroker:
        options = BrokerOptions(
            time_scale=clock.scale,
            settings=self.transport_settings(teams, **extra),
            clock=clock,
        )
        return await open_pubsub_broker(options)

    async def aclose(self) -> None:
        await self.api.aclose()


def request_body(
    request_id: str, *, now: float, ttl: float = 300, max_tokens: int = 8
) -> dict[str, Any]:
    return {
        "id": request_id,
        "created": int(now),
        "deadline": now + ttl,
        "payload": {"model": "sim-model", "prompt": "summarize this", "max_tokens": max_tokens},
    }


async def new_topics(teams: Sequence[str], **kw: Any) -> Topics:
    topics = Topics(run=f"t{uuid.uuid4().hex[:10]}")
    await topics.create(teams, **kw)
    return topics


def team_queues(topics: Topics, url: str, teams: Sequence[str] = tuple(TEAMS)) -> list[QueueSpec]:
    """The guide's team queues as Pub/Sub subscriptions, quota classifying on ``team``."""
    return [
        QueueSpec(
            id=f"team-{team}",
            queue_name=topics.subscription(team),
            igw_base_url=url,
            pool_id="teams",
            labels={"tier": TEAMS[team][0]},
            gate_type="redis-quota",
            gate_params={
                "attribute": "team",
                "mode": "concurrency",
                "limit": str(TEAMS[team][1]),
                "gating_mode": "classifying",
            },
        )
        for team in teams
    ]


def guide_settings(
    topics: Topics, queues: Sequence[QueueSpec], *, workers: int, **kw: Any
) -> ProcessorSpec:
    merge = MergeSpec(
        ordering="tier-priority",
        headers=HeaderPolicy(
            stamp_lanes=True,
            lane_objectives={k: k for k in LANE_KEYS},
            fairness_attribute="team",
        ),
    )
    base: dict[str, Any] = {
        "queues": queues,
        "pools": (PoolSpec(id="teams", workers=workers),),
        "merge": merge,
        "result_queue_name": topics.result_topic,
        "poll_interval": 1.0,
        "backlog_interval": 0,
        "claim_lease": 30.0,
    }
    base.update(kw)
    return ProcessorSpec(**base)
