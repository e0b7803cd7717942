"""The processor on the gcp-pubsub transport against the emulator: scenarios A and B,
bad messages, cancellation, and a request retried through the ack deadline."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry
from pubsub_harness import (
    FAIRNESS,
    OBJECTIVE,
    TEAMS,
    Topics,
    guide_settings,
    new_topics,
    request_body,
    team_queues,
)

from sluiceway.broker.base import ActiveMarker
from sluiceway.broker.pubsub import PubSubBroker
from sluiceway.clock import RealClock
from sluiceway.gates.base import BudgetGate
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.localservices import PubSubEmulator
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import ProcessorSpec
from sluiceway.sim import SimConfig, SimPool, running_simulator
from sluiceway.wire import ErrorCode, encode_envelope
from sluiceway.wire.envelope import Envelope, RequestData

pytestmark = [pytest.mark.pubsub, pytest.mark.serial]

SCALE = 20.0


@dataclass
class PubSubRig:
    topics: Topics
    broker: PubSubBroker
    clock: RealClock
    sim: SimPool
    url: str
    store: MemoryQuotaStore
    registry: CollectorRegistry

    def processor(self, settings: ProcessorSpec) -> Processor:
        return Processor(
            settings,
            self.broker,
            clock=self.clock,
            registry=self.registry,
            quota_store=lambda address: self.store,
        )

    def counter(self, name: str, team: str, **extra: str) -> float:
        labels = {
            "queue_id": f"team-{team}",
            "queue_name": self.topics.subscription(team),
            "pool_name": "teams",
            **extra,
        }
        value = self.registry.get_sample_value(f"llm_d_async_async_{name}", labels)
        return 0.0 if value is None else value


@asynccontextmanager
async def pubsub_rig(sim: SimConfig | None = None) -> AsyncIterator[PubSubRig]:
    clock = RealClock(scale=SCALE)
    config = sim or SimConfig(
        max_num_seqs=16,
        time_to_first_token=0.05,
        inter_token_latency=0.02,
        label_headers=(OBJECTIVE, FAIRNESS),
    )
    topics = await new_topics(list(TEAMS))
    broker = await topics.broker(list(TEAMS), clock)
    try:
        async with running_simulator(config, instances=1, clock=clock) as pool:
            store, registry = MemoryQuotaStore(), CollectorRegistry()
            yield PubSubRig(topics, broker, clock, pool, pool.urls[0], store, registry)
    finally:
        await broker.aclose()
        await topics.aclose()


@pytest.fixture(autouse=True)
def _emulator(pubsub_emulator: PubSubEmulator) -> None:
    """Every test here needs the emulator."""


async def test_scenario_a_one_worker_dispatches_in_tier_order() -> None:
    async with pubsub_rig() as r:
        for team in ("batch", "standard", "premium"):
            await r.topics.publish(team, 1, now=r.clock.now())
        settings = guide_settings(r.topics, team_queues(r.topics, r.url), workers=1)
        async with r.processor(settings):
            results = await r.topics.results(3)
        assert [res.status_code for res in results] == [200, 200, 200]
        assert [res.id.split("-")[0] for res in results] == ["premium", "standard", "batch"]
        engine = r.sim.engines[0]
        assert set(engine.max_running_by_label(OBJECTIVE)) == {
            "reserved-interactive",
            "reserved-async",
            "reserved-batch",
        }
        assert set(engine.max_running_by_label(FAIRNESS)) == {"premium", "standard", "batch"}
        assert all(res.request_token for res in results)


async def test_scenario_b_quota_caps_reserved_lanes_and_premium_finishes_first() -> None:
    async with pubsub_rig() as r:
        peaks = {"quota:team:batch": 0, "quota:team:premium": 0}

        async def sample() -> None:
            while True:
                for key in peaks:
                    peaks[key] = max(peaks[key], await r.store.count(key))
                await asyncio.sleep(0.001)

        await r.topics.publish("batch", 100, now=r.clock.now())
        await r.topics.publish("premium", 20, now=r.clock.now())
        queues = team_queues(r.topics, r.url, ("premium", "batch"))
        sampler = asyncio.create_task(sample())
        async with r.processor(guide_settings(r.topics, queues, workers=16)):
            results = await r.topics.results(120, within=90)
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
        assert all(res.status_code == 200 for res in results)
        assert len({res.id for res in results}) == 120
        seen = r.sim.engines[0].max_running_by_label(OBJECTIVE)
        assert seen.get("reserved-batch", 0) <= 1 and seen.get("reserved-interactive", 0) <= 2
        assert seen.get("overflow-batch", 0) > 0 and seen.get("overflow-interactive", 0) > 0
        assert peaks["quota:team:batch"] == 1 and peaks["quota:team:premium"] == 2
        order = [res.id.split("-")[0] for res in results]
        last_premium = max(i for i, team in enumerate(order) if team == "premium")
        assert last_premium < len(order) - 16  # premium done before the final batch wave
        assert await r.store.count("quota:team:batch") == 0


async def test_bad_messages_get_an_error_result_or_are_acked_and_counted() -> None:
    async with pubsub_rig() as r:
        now = r.clock.now()
        bad_deadline = {**request_body("bad-deadline", now=now), "deadline": -1}
        bodies = [b"not json", b'{"no": "id"}', json.dumps(bad_deadline).encode()]
        await r.topics.publish_raw("batch", bodies, {"team": "batch"})
        await r.topics.publish("batch", 1, now=now)
        proc = r.processor(guide_settings(r.topics, team_queues(r.topics, r.url), workers=2))
        async with proc:
            results = await r.topics.results(2)
            by_id = {res.id: res for res in results}
            assert by_id["batch-0000"].status_code == 200
            assert by_id["bad-deadline"].error_code == ErrorCode.INVALID_REQUEST
            assert r.counter("invalid_entries_total", "batch") == 2
            # Nothing comes back: no further result within more than a hold.
            quiet = r.broker.settings.hold_seconds + 2
            assert await r.topics.drain_results(quiet_for=quiet) == []
            assert r.counter("invalid_entries_total", "batch") == 2  # not delivered again


async def test_a_cancelled_request_gets_one_cancelled_result() -> None:
    async with pubsub_rig() as r:
        queue = r.topics.subscription("batch")
        now = r.clock.now()
        data = RequestData(id="c-1", deadline=now + 300, payload={"max_tokens": 8})
        envelope = Envelope(data=data).with_internal(request_token="c" * 32)
        marker = ActiveMarker("c-1", "c" * 32, 300.0)
        await r.broker.enqueue(queue, [(encode_envelope(envelope), now + 300)], markers=[marker])
        assert await r.broker.cancel("c-1", expire_after=60)
        async with r.processor(guide_settings(r.topics, team_queues(r.topics, r.url), workers=1)):
            [result] = await r.topics.results(1)
        assert result.error_code == ErrorCode.CANCELLED and result.request_token == "c" * 32
        assert await r.topics.drain_results(quiet_for=1.0) == []


async def test_a_failed_attempt_is_retried_after_its_backoff_and_completes() -> None:
    config = SimConfig(
        max_num_seqs=4,
        time_to_first_token=0.05,
        inter_token_latency=0.02,
        label_headers=(OBJECTIVE,),
    )
    async with pubsub_rig(config) as r:
        body = {
            **request_body("r-1", now=r.clock.now()),
            "headers": {"X-Return-Error": "503;times=1"},
        }
        await r.topics.publish_raw("batch", [json.dumps(body).encode()], {"team": "batch"})
        async with r.processor(guide_settings(r.topics, team_queues(r.topics, r.url), workers=1)):
            [result] = await r.topics.results(1)
            assert r.counter("request_retries_total", "batch") == 1
        assert result.status_code == 200
        assert await r.topics.drain_results(quiet_for=1.0) == []


class DialGate(BudgetGate):
    """A queue gate whose budget the test turns (a metric gate's signal, in short)."""

    def __init__(self) -> None:
        self.value = 0.0

    async def budget(self, now: float) -> float:
        return self.value


async def test_a_budget_change_reaches_held_messages_within_a_poll() -> None:
    async with pubsub_rig() as r:
        await r.topics.publish("batch", 3, now=r.clock.now())
        queues = team_queues(r.topics, r.url, ["batch"])
        proc = r.processor(guide_settings(r.topics, queues, workers=4, poll_interval=2.0))
        dial = DialGate()
        proc.ingests[0].gate = dial  # the queue's gate: closed
        async with proc:
            await asyncio.sleep(r.clock.to_wall(6.0))  # three polls: nothing may run
            assert await r.topics.drain_results(quiet_for=0.5) == []
            assert r.counter("gate_decisions_total", "batch", reason="gate_closed") > 0
            opened = r.clock.now()
            dial.value = 1.0
            results = await r.topics.results(3, within=15)
            admitted_after = r.clock.now() - opened
        assert all(res.status_code == 200 for res in results)
        # Held messages are screened again at the next poll (2 s scaled): the answers come
        # within a few polls, far inside the 10 s wall (200 s scaled) of a re-read ticker
        # that restarts its stream.
        assert admitted_after < 20.0
