"""The producer client over the memory broker: envelope shape, cancel, results."""

from __future__ import annotations

import json

import pytest

from sluiceway.broker.base import ResultWrite, claim_key
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import VirtualClock
from sluiceway.errors import WireError
from sluiceway.processor.producer import Producer, request
from sluiceway.wire import ResultRecord

NOW = 1_700_000_000.0


def make() -> tuple[MemoryBroker, Producer]:
    broker = MemoryBroker()
    return broker, Producer(broker, queue="team-a", result_queue="mine", clock=VirtualClock(NOW))


async def test_submit_writes_the_upstream_envelope_at_its_deadline() -> None:
    broker, producer = make()
    sub = await producer.submit(
        request("r1", {"prompt": "x"}, deadline=NOW + 60, metadata={"team": "a"}, created=NOW)
    )
    (entry,) = await broker.peek("team-a", 5)
    doc = json.loads(entry.member)
    assert entry.score == NOW + 60 and doc["request_kind"] == "plain"
    assert doc["internal"] == {
        "request_token": sub.request_token,
        "request_queue_name": "team-a",
        "result_queue_name": "mine",
    }
    assert doc["data"] == {
        "id": "r1",
        "created": int(NOW),
        "deadline": NOW + 60,
        "payload": {"prompt": "x"},
        "metadata": {"team": "a"},
    }
    assert len(sub.request_token) == 32


async def test_submit_many_mints_a_token_per_request() -> None:
    broker, producer = make()
    subs = await producer.submit_many(
        [request(f"r{i}", {}, deadline=NOW + 9) for i in range(3)], queue="other"
    )
    assert len({s.request_token for s in subs}) == 3 and await broker.backlog("other") == 3


async def test_past_deadlines_and_missing_ids_are_refused() -> None:
    _, producer = make()
    with pytest.raises(WireError):
        await producer.submit(request("late", {}, deadline=NOW - 1))
    with pytest.raises(WireError):
        await producer.submit(request("", {}, deadline=NOW + 1))


async def test_cancel_marks_only_known_requests() -> None:
    broker, producer = make()
    sub = await producer.submit(request("r1", {}, deadline=NOW + 60))
    assert await producer.cancel(["r1", "ghost"]) == {"r1": True, "ghost": False}
    assert await broker.is_cancelled("r1", sub.request_token)


async def test_results_are_read_in_order() -> None:
    broker, producer = make()
    subs = await producer.submit_many([request(f"r{i}", {}, deadline=NOW + 9) for i in range(2)])
    for sub, entry in zip(subs, await broker.peek("team-a", 2), strict=True):
        claim = await broker.claim(
            entry, key=claim_key(sub.id, sub.request_token), owner="o" * 16, lease_until=NOW + 9
        )
        assert claim is not None
        record = ResultRecord.ok(sub.id, 200, "ok", request_token=sub.request_token)
        await broker.ack(claim, ResultWrite("mine", record.encode(), sub.id, sub.request_token))
    got = [r.id async for r in producer.results(block_for=0, follow=False)]
    assert got == ["r0", "r1"]
    assert await producer.get_result() is None
