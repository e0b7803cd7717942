"""A cancel takes a batch's queued lines out of the queue; claimed ones and other requests
stay."""

from __future__ import annotations

from sluiceway.batch.withdraw import withdraw_queued
from sluiceway.broker.base import claim_key
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.processor.producer import Producer, request
from sluiceway.wire import ErrorCode, decode_envelope, decode_result


async def test_only_the_batchs_pending_lines_are_answered() -> None:
    broker, clock = MemoryBroker(), RealClock()
    producer = Producer(broker, clock=clock)
    now = clock.now()
    ids = [f"t:batch_x-{n}" for n in range(1, 6)] + ["t:batch_y-1", "u:other"]
    await producer.submit_many(
        [request(i, {"p": 1}, deadline=now + 600) for i in ids], queue="q", result_queue="res"
    )
    (running,) = [e for e in await broker.peek("q", 10) if "batch_x-1" in e.member]
    envelope = decode_envelope(running.member)
    key = claim_key(envelope.id, envelope.request_token)
    assert await broker.claim(running, key=key, owner="proc", lease_until=now + 60)
    taken = await withdraw_queued(
        broker,
        "q",
        id_prefix="t:batch_x-",
        destination="res",
        code=ErrorCode.CANCELLED,
        now=now,
        result_ttl=60,
    )
    assert taken == 4
    records = [decode_result(r) for r in await broker.peek_results("res", 10)]
    assert sorted(r.id for r in records) == [f"t:batch_x-{n}" for n in range(2, 6)]
    assert {r.error_code for r in records} == {"CANCELLED"}
    left = sorted(decode_envelope(e.member).id for e in await broker.peek("q", 10))
    assert left == ["t:batch_y-1", "u:other"]
    assert not await broker.is_pending("t:batch_x-2")
    assert await broker.is_pending("t:batch_x-1")  # running: it finishes
