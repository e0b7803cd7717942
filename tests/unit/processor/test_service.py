"""The processor's background tasks over the memory broker on a virtual clock."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client import CollectorRegistry

from sluiceway.broker.base import claim_key
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import VirtualClock
from sluiceway.processor.producer import Producer, request
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.wire import decode_envelope

NOW = 1_700_000_000.0
A = QueueSpec(id="a", queue_name="a", igw_base_url="http://127.0.0.1:9", pool_id="p")
# A closed gate: ingest leaves b's entries pending, so only the background tasks touch them.
B = replace(A, id="b", queue_name="b", gate_type="constant", gate_params={"budget": 0})


async def _orphan_claim(broker: MemoryBroker, queue: str) -> None:
    """Claim the head of ``queue`` for an owner whose lease has already ended."""
    (entry,) = await broker.peek(queue, 1)
    envelope = decode_envelope(entry.member)
    key = claim_key(envelope.id, envelope.request_token)
    assert await broker.claim(entry, key=key, owner="gone", lease_until=NOW - 1) is not None


async def test_reclaimer_and_backlog_poller_follow_a_reload() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    settings = ProcessorSpec(
        queues=(A,), pools=(PoolSpec("p", 1),), reclaim_interval=1.0, backlog_interval=1.0
    )
    registry = CollectorRegistry()
    async with Processor(settings, broker, clock=clock, registry=registry) as proc:
        await proc.reconfigure([A, B])
        await Producer(broker, queue="b", clock=clock).submit(request("r", {}, deadline=NOW + 60))
        await _orphan_claim(broker, "b")
        assert await broker.backlog("b") == 0
        for _ in range(3):
            clock.advance(1.0)
            await clock.run_until_idle(limit=0.5)
        assert await broker.backlog("b") == 1  # reclaimed
        labels = {"queue_id": "b", "queue_name": "b", "pool_name": "p"}
        backlog = registry.get_sample_value("llm_d_async_async_broker_backlog", labels)
        assert backlog == 1.0


async def test_wait_idle_returns_once_every_queue_was_read_and_nothing_is_held() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    settings = ProcessorSpec(queues=(A, B), pools=(PoolSpec("p", 2),), result_queue_name="res")
    late = Producer(broker, queue="a", clock=clock)
    await late.submit_many([request(f"late-{i}", {}, deadline=NOW + 1) for i in range(3)])
    await Producer(broker, queue="b", clock=clock).submit(request("r", {}, deadline=NOW + 60))
    clock.advance(2)  # a's entries are past their deadline: answered at ingest
    async with Processor(settings, broker, clock=clock, registry=CollectorRegistry()) as proc:
        await proc.wait_idle()
        assert await broker.result_count("res") == 3
        assert await broker.backlog("a") == 0 and await broker.backlog("b") == 1
        assert broker.claimed_count("a") == broker.claimed_count("b") == 0


async def test_the_backlog_is_polled_at_start_not_one_interval_later() -> None:
    clock, broker = VirtualClock(NOW), MemoryBroker()
    await Producer(broker, queue="b", clock=clock).submit(request("r", {}, deadline=NOW + 60))
    settings = ProcessorSpec(queues=(B,), pools=(PoolSpec("p", 1),), backlog_interval=15.0)
    registry = CollectorRegistry()
    async with Processor(settings, broker, clock=clock, registry=registry):
        await clock.run_until_idle(limit=0.5)
        labels = {"queue_id": "b", "queue_name": "b", "pool_name": "p"}
        assert clock.now() < NOW + 15
        assert registry.get_sample_value("llm_d_async_async_broker_backlog", labels) == 1.0
