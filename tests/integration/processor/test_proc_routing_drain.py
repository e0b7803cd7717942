"""Result routing precedence, bad entries, graceful drain and the drain timeout."""

from __future__ import annotations

import asyncio
import json

import pytest
from processor_harness import RESULTS, collect, guide_entry, guide_settings, rig, wait_until
from prometheus_client import CollectorRegistry

from sluiceway.processor.producer import Producer, request
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import QueueSpec
from sluiceway.sim import SimConfig
from sluiceway.wire import decode_envelope

pytestmark = pytest.mark.serial

SLOW = SimConfig(max_num_seqs=4, time_to_first_token=0.05, inter_token_latency=0.05)


async def test_result_routing_precedence() -> None:
    async with rig() as r:
        plain = QueueSpec(id="plain", queue_name="plain", igw_base_url=r.url, pool_id="teams")
        routed = QueueSpec(
            id="routed",
            queue_name="routed",
            igw_base_url=r.url,
            pool_id="teams",
            result_queue_name="queue-results",
        )
        now = r.clock.now()
        await r.broker.enqueue("plain", [guide_entry("p", 0, now=now)])
        await r.broker.enqueue("routed", [guide_entry("q", 0, now=now)])
        own = Producer(r.broker, queue="routed", result_queue="mailbox:own", clock=r.clock)
        await own.submit(
            request(
                "own", {"model": "sim-model", "prompt": "x", "max_tokens": 2}, deadline=now + 60
            )
        )
        async with Processor(
            guide_settings([plain, routed], workers=2),
            r.broker,
            clock=r.clock,
            registry=CollectorRegistry(),
        ):
            (default,) = await collect(r.broker, 1, destination=RESULTS)
            (by_queue,) = await collect(r.broker, 1, destination="queue-results")
            mine = await own.get_result(block_for=10)
        assert (default.id, by_queue.id) == ("p-r-0000", "q-r-0000")
        assert mine is not None and mine.id == "own" and mine.status_code == 200


async def test_bad_entries_are_answered_or_moved_aside() -> None:
    async with rig() as r:
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        now = r.clock.now()
        no_deadline = json.dumps({"internal": {}, "request_kind": "plain", "data": {"id": "nd"}})
        await r.broker.enqueue("q", [("{not json", now), (no_deadline, now + 1)])
        async with Processor(
            guide_settings([q], workers=1), r.broker, clock=r.clock, registry=CollectorRegistry()
        ) as proc:
            (result,) = await collect(r.broker, 1)
            invalid = proc.metrics.registry.get_sample_value(
                "llm_d_async_async_invalid_entries_total",
                {"queue_id": "q", "queue_name": "q", "pool_name": "teams"},
            )
        assert result.id == "nd" and result.error_code == "INVALID_REQUEST"
        assert r.broker.invalid_entries("q") == ["{not json"]
        assert invalid == 1.0


async def test_drain_finishes_in_flight_and_returns_the_buffered() -> None:
    async with rig(SLOW, scale=10.0) as r:
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        now = r.clock.now()
        await r.broker.enqueue("q", [guide_entry("t", i, now=now, max_tokens=20) for i in range(6)])
        proc = Processor(
            guide_settings([q], workers=2, buffer_per_queue=2),
            r.broker,
            clock=r.clock,
            registry=CollectorRegistry(),
        )
        await proc.start()
        engine = r.sim.engines[0]
        await wait_until(lambda: engine.num_running == 2)
        assert await r.broker.peek("q", 10) != []
        await proc.stop(drain_timeout=60)
        assert not proc.ready
        results = await collect(r.broker, 2)
        assert all(res.status_code == 200 for res in results)
        assert await r.broker.backlog("q") == 4
        assert r.broker.claimed_count("q") == 0


async def test_drain_timeout_returns_in_flight_with_its_retry_count() -> None:
    async with rig(SLOW, scale=10.0) as r:
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        await r.broker.enqueue("q", [guide_entry("t", 0, now=r.clock.now(), max_tokens=400)])
        proc = Processor(
            guide_settings([q], workers=1), r.broker, clock=r.clock, registry=CollectorRegistry()
        )
        await proc.start()
        engine = r.sim.engines[0]
        await wait_until(lambda: engine.num_running == 1)
        await proc.stop(drain_timeout=0.5)
        (entry,) = await r.broker.peek("q", 5)
        assert decode_envelope(entry.member).internal.retry_count == 0
        assert await r.broker.result_count(RESULTS) == 0
        await wait_until(lambda: engine.num_running == 0, within=2)


async def test_force_stop_ends_a_long_drain_at_once() -> None:
    """A second stop signal during the drain: the in-flight request goes back to its queue
    with its retry count unchanged, without waiting for the drain timeout."""
    async with rig(SLOW, scale=10.0) as r:
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        await r.broker.enqueue("q", [guide_entry("t", 0, now=r.clock.now(), max_tokens=400)])
        proc = Processor(
            guide_settings([q], workers=1), r.broker, clock=r.clock, registry=CollectorRegistry()
        )
        await proc.start()
        engine = r.sim.engines[0]
        await wait_until(lambda: engine.num_running == 1)
        stopping = asyncio.create_task(proc.stop(drain_timeout=3600))
        await wait_until(lambda: not proc.ready)
        assert not stopping.done()
        proc.force_stop()
        await asyncio.wait_for(stopping, 10)
        (entry,) = await r.broker.peek("q", 5)
        assert decode_envelope(entry.member).internal.retry_count == 0
        assert await r.broker.result_count(RESULTS) == 0
