"""What one queue's ingest feeds its overload order, over the memory broker on a virtual clock:
the oldest sojourn from ``created`` (or from when the head was first seen), one head peek per
poll interval at most, the gauge, and the expired head answered while reading newest first."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sluiceway.broker.memory import MemoryBroker
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, LATEST_DEADLINE, PeekOrder
from sluiceway.clock import VirtualClock
from sluiceway.processor.ingest import QueueIngest
from sluiceway.processor.metrics import ProcessorMetrics
from sluiceway.processor.producer import Producer, request
from sluiceway.processor.ready_buffer import ReadyBuffer
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.wire import ErrorCode

from .test_ingest import LosingBroker

NOW = 1_700_000_000.0
QUEUE = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw", pool_id="p")
SETTINGS = ProcessorSpec(queues=[QUEUE], pools=(PoolSpec(id="p", workers=2),))


def _ingest(broker: MemoryBroker, clock: VirtualClock, **settings: float) -> QueueIngest:
    spec = replace(SETTINGS, **settings)
    rt = Runtime(broker=broker, clock=clock, settings=spec, metrics=ProcessorMetrics())
    pool = ReadyBuffer(spec.pools[0], ordering="tier-priority", queues=1)
    return QueueIngest(rt, QUEUE, pool, None)


async def _submit(broker: MemoryBroker, clock: VirtualClock, count: int, ttl: float = 60) -> None:
    now = clock.now()
    batch = [request(f"r{now:.0f}-{i}", {}, deadline=now + ttl, created=now) for i in range(count)]
    await Producer(broker, queue="q", result_queue="out", clock=clock).submit_many(batch)


async def _passes(ingest: QueueIngest, clock: VirtualClock, seconds: int) -> PeekOrder:
    """One probe a second (no ingest reads: the pool has no room) for ``seconds``."""
    for _ in range(seconds):
        clock.advance(1.0)
        await ingest.order.after_pass()
    return ingest.order.order


def _gauge(ingest: QueueIngest, order: PeekOrder) -> float | None:
    labels = {"queue_id": "q", "queue_name": "q", "pool_name": "p", "order": order.value}
    registry = ingest._rt.metrics.registry
    return registry.get_sample_value("sluiceway_processor_peek_order", labels)


async def test_an_old_head_turns_the_queue_newest_first_and_the_gauge_says_so() -> None:
    broker, clock = MemoryBroker(), VirtualClock(NOW)
    ingest = _ingest(broker, clock)
    await _submit(broker, clock, 3)
    assert await _passes(ingest, clock, 5) is EARLIEST_DEADLINE  # sojourn 5 from t=5
    assert await _passes(ingest, clock, 9) is EARLIEST_DEADLINE
    assert await _passes(ingest, clock, 1) is LATEST_DEADLINE  # above the target for 10 s
    assert (_gauge(ingest, LATEST_DEADLINE), _gauge(ingest, EARLIEST_DEADLINE)) == (1.0, 0.0)


@pytest.mark.parametrize("created", [None, NOW + 3600], ids=["none", "in-the-future"])
async def test_a_head_without_a_usable_created_counts_from_when_it_was_first_seen(
    created: float | None,
) -> None:
    broker, clock = MemoryBroker(), VirtualClock(NOW)
    data = {"id": "raw", "deadline": NOW + 600, "payload": {}}
    if created is not None:
        data["created"] = created  # another host's clock, ahead of ours
    await broker.enqueue("q", [(json.dumps({"data": data}), NOW + 600)])
    ingest = _ingest(broker, clock)
    clock.advance(100.0)  # waited unseen: nothing to tell from
    assert await _passes(ingest, clock, 15) is EARLIEST_DEADLINE  # seen at +101: 14 s above 0
    assert await _passes(ingest, clock, 1) is LATEST_DEADLINE


async def test_the_head_is_peeked_once_per_poll_interval_unless_a_pass_read_it() -> None:
    broker, clock = LosingBroker(), VirtualClock(NOW)
    ingest = _ingest(broker, clock, poll_interval=2.0)
    await _submit(broker, clock, 3)
    for _ in range(4):
        await ingest.order.after_pass()
        clock.advance(0.5)
    assert broker.peeks == 1
    await ingest.order.peek(10, 0)  # a pass read the head in deadline order
    await ingest.order.after_pass()
    assert broker.peeks == 2


async def test_zero_turns_it_off_without_a_single_extra_peek() -> None:
    broker, clock = LosingBroker(), VirtualClock(NOW)
    ingest = _ingest(broker, clock, overload_sojourn_target=0.0)
    await _submit(broker, clock, 3)
    assert await _passes(ingest, clock, 60) is EARLIEST_DEADLINE
    assert broker.peeks == 0


class FixedOrderBroker(LosingBroker):
    """A broker that reads in its own order whatever ``peek`` is told (as Pub/Sub does)."""

    fixed_peek_order = True


async def test_a_broker_with_its_own_order_is_left_in_deadline_order_unpeeked() -> None:
    broker, clock = FixedOrderBroker(), VirtualClock(NOW)
    ingest = _ingest(broker, clock)
    await _submit(broker, clock, 3)
    assert not ingest.order.policy.enabled
    assert await _passes(ingest, clock, 60) is EARLIEST_DEADLINE
    assert broker.peeks == 0


async def test_read_newest_first_the_expired_head_is_answered_and_the_rest_waits() -> None:
    broker, clock = MemoryBroker(), VirtualClock(NOW)
    ingest = _ingest(broker, clock)
    await _submit(broker, clock, 12, ttl=30)  # more than one page (batch_size 10)
    clock.advance(10.0)
    await _submit(broker, clock, 2, ttl=30)
    assert await _passes(ingest, clock, 15) is LATEST_DEADLINE
    clock.set(NOW + 31)  # the first twelve are past their deadline, the last two are not
    await ingest.order.after_pass()
    producer = Producer(broker, queue="q", result_queue="out", clock=clock)
    results = [r async for r in producer.results(block_for=0.01, follow=False)]
    assert len(results) == 12
    assert {r.error_code for r in results} == {str(ErrorCode.DEADLINE_EXCEEDED)}
    assert await broker.backlog("q") == 2
    # the live head waited 21 s: still above the target, so still newest first
    assert ingest.order.order is LATEST_DEADLINE
