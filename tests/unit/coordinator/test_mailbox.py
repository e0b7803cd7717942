from __future__ import annotations

import asyncio
import json

import pytest

from brokers.flaky import FlakyBroker
from sluiceway.broker.base import BrokerOptions, claim_key
from sluiceway.broker.memory import MemoryBroker
from sluiceway.broker.sqlite import open_sqlite_broker
from sluiceway.clock import RealClock
from sluiceway.coordinator.mailbox import (
    BlipPolicy,
    Mailboxes,
    MailboxState,
    QueuedRequest,
    WakePlan,
    envelope_id,
    mailbox_key,
    wake_plan,
)
from sluiceway.errors import BrokerError, ConfigError
from sluiceway.wire import ErrorCode, ResultRecord, decode_envelope, decode_result

QUEUE = "team-batch"


def queued(request_id: str = "r1", tenant: str = "batch") -> QueuedRequest:
    return QueuedRequest(
        tenant=tenant,
        request_id=request_id,
        queue=QUEUE,
        payload={"model": "m", "prompt": "p"},
        deadline=RealClock().now() + 60,
        endpoint="/v1/completions",
        metadata={"team": tenant},
        headers={"x-llm-d-slo-ttft-ms": "100"},
    )


async def answer(broker: MemoryBroker, record: ResultRecord) -> None:
    """What a processor does: claim the queued entry and ack it with ``record``."""
    (entry,) = await broker.peek(QUEUE, 1)
    envelope = decode_envelope(entry.member)
    key = claim_key(envelope.data.id, envelope.internal.request_token)
    claim = await broker.claim(entry, key=key, owner="o" * 16, lease_until=2e9)
    assert claim is not None
    from sluiceway.broker.base import ResultWrite

    write = ResultWrite(
        envelope.internal.result_queue_name,
        record.encode(),
        envelope.data.id,
        envelope.internal.request_token,
    )
    assert await broker.ack(claim, write)


def boxes(broker: MemoryBroker, grace: float = 60.0) -> Mailboxes:
    return Mailboxes(broker, clock=RealClock(), wake=WakePlan(notify=True), fetch_grace=grace)


async def test_a_queued_request_is_the_upstream_envelope_with_its_own_mailbox() -> None:
    broker = MemoryBroker()
    await boxes(broker).attach_or_submit(queued(), reattach=False)
    (entry,) = await broker.peek(QUEUE, 1)
    envelope = decode_envelope(entry.member)
    assert envelope.data.id == "batch:r1"
    assert envelope.internal.result_queue_name == "results:req:batch:r1"
    assert envelope.internal.request_queue_name == QUEUE
    assert envelope.data.metadata == {"team": "batch"}
    assert envelope.data.headers == {"x-llm-d-slo-ttft-ms": "100"}
    assert envelope.data.endpoint == "/v1/completions"
    assert json.loads(json.dumps(envelope.data.payload)) == {"model": "m", "prompt": "p"}


async def test_states_pending_ready_then_gone_after_a_zero_grace_delivery() -> None:
    broker = MemoryBroker()
    mb = boxes(broker, grace=0)
    assert (await mb.lookup("batch", "r1")).state is MailboxState.UNKNOWN
    await mb.attach_or_submit(queued(), reattach=False)
    assert (await mb.lookup("batch", "r1")).state is MailboxState.PENDING
    assert (await mb.lookup("other", "r1")).state is MailboxState.UNKNOWN
    await answer(broker, ResultRecord.ok("batch:r1", 200, "{}"))
    found = await mb.lookup("batch", "r1")
    assert found.state is MailboxState.READY and found.record is not None
    await mb.delivered("batch", "r1")
    assert (await mb.lookup("batch", "r1")).state is MailboxState.UNKNOWN


async def test_wait_for_result_wakes_when_the_result_lands_and_times_out_at_until() -> None:
    broker, clock = MemoryBroker(), RealClock()
    mb = boxes(broker)
    await mb.attach_or_submit(queued(), reattach=False)
    assert await mb.wait_for_result("batch", "r1", until=clock.now() + 0.05) is None
    held = asyncio.create_task(mb.wait_for_result("batch", "r1", until=clock.now() + 30))
    await asyncio.sleep(0.02)
    await answer(broker, ResultRecord.ok("batch:r1", 200, '{"x": 1}'))
    record = await asyncio.wait_for(held, 5)
    assert record is not None and decode_result(record).payload == '{"x": 1}'


async def test_reattach_never_queues_twice_and_withdraws_a_cancellation() -> None:
    broker = MemoryBroker()
    mb = boxes(broker)
    await mb.attach_or_submit(queued(), reattach=True)
    assert await mb.cancel("batch", "r1")
    found = await mb.attach_or_submit(queued(), reattach=True)
    assert found.state is MailboxState.PENDING
    assert await broker.backlog(QUEUE) == 1
    (entry,) = await broker.peek(QUEUE, 1)
    token = decode_envelope(entry.member).internal.request_token
    assert not await broker.is_cancelled(envelope_id("batch", "r1"), token)


async def test_reattach_serves_a_stored_result_and_replaces_a_cancelled_one() -> None:
    broker = MemoryBroker()
    mb = boxes(broker)
    await mb.attach_or_submit(queued(), reattach=True)
    await answer(broker, ResultRecord.error("batch:r1", ErrorCode.CANCELLED))
    found = await mb.attach_or_submit(queued(), reattach=True)
    assert found.state is MailboxState.PENDING  # the tombstone went, a fresh copy is queued
    assert await broker.backlog(QUEUE) == 1
    assert await broker.peek_result(mailbox_key("batch", "r1")) is None
    await answer(broker, ResultRecord.ok("batch:r1", 200, "{}"))
    served = await mb.attach_or_submit(queued(), reattach=True)
    assert served.state is MailboxState.READY
    assert await broker.backlog(QUEUE) == 0


async def test_delete_cancels_and_removes_the_result() -> None:
    broker = MemoryBroker()
    mb = boxes(broker)
    await mb.attach_or_submit(queued(), reattach=False)
    assert await mb.delete("batch", "r1")
    (entry,) = await broker.peek(QUEUE, 1)
    token = decode_envelope(entry.member).internal.request_token
    assert await broker.is_cancelled("batch:r1", token)


async def test_wake_plans(tmp_path: object) -> None:
    assert wake_plan(MemoryBroker(), "auto").notify
    assert not wake_plan(MemoryBroker(), "poll").notify
    sqlite = await open_sqlite_broker(BrokerOptions(url=f"{tmp_path}/b.db"))
    try:
        assert not wake_plan(sqlite, "auto").notify
        with pytest.raises(ConfigError) as err:
            wake_plan(sqlite, "notify")
        assert err.value.field == "wakeup_mode"
    finally:
        await sqlite.aclose()


FAST = BlipPolicy(attempts=4, first_backoff=0.01, max_backoff=0.02)


def flaky_boxes(broker: FlakyBroker, grace: float = 60.0) -> Mailboxes:
    return Mailboxes(
        broker, clock=RealClock(), wake=WakePlan(notify=True), fetch_grace=grace, blips=FAST
    )


def test_the_blip_policy_doubles_its_pauses_up_to_the_maximum() -> None:
    assert BlipPolicy().backoffs() == [0.1, 0.2, 0.4, 0.8]
    assert FAST.backoffs() == [0.01, 0.02, 0.02]
    assert BlipPolicy(attempts=1).backoffs() == []


async def test_a_held_wait_rides_out_a_broker_blip() -> None:
    broker = FlakyBroker()
    mb = flaky_boxes(broker)
    await mb.attach_or_submit(queued(), reattach=False)
    await answer(broker, ResultRecord.ok("batch:r1", 200, '{"x": 1}'))
    broker.fail("peek_result", 3)  # one fewer than the attempts
    record = await mb.wait_for_result("batch", "r1", until=RealClock().now() + 30)
    assert record is not None and decode_result(record).payload == '{"x": 1}'
    assert broker.failed["peek_result"] == 3


async def test_a_broker_down_past_the_retries_reaches_the_caller() -> None:
    broker = FlakyBroker()
    mb = flaky_boxes(broker)
    broker.fail("peek_result", 4)
    with pytest.raises(BrokerError, match="peek_result failed"):
        await mb.lookup("batch", "r1")


async def test_a_delivery_whose_expiry_cannot_be_set_still_counts_as_delivered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = FlakyBroker()
    mb = flaky_boxes(broker, grace=0)
    await mb.attach_or_submit(queued(), reattach=False)
    await answer(broker, ResultRecord.ok("batch:r1", 200, "{}"))
    broker.fail("expire_result", 10)
    await mb.delivered("batch", "r1")  # no BrokerError: the answer is out already
    assert broker.failed["expire_result"] == 4
    assert "its expiry not shortened" in caplog.text
    assert (await mb.lookup("batch", "r1")).state is MailboxState.READY  # it expires later


async def test_delete_of_an_unknown_or_another_tenants_id_does_nothing() -> None:
    broker = MemoryBroker()
    mb = boxes(broker)
    await mb.attach_or_submit(queued(), reattach=False)
    assert not await mb.delete("premium", "r1")  # batch's id, asked by premium
    assert not await mb.delete("batch", "never-queued")
    (entry,) = await broker.peek(QUEUE, 1)
    token = decode_envelope(entry.member).internal.request_token
    assert not await broker.is_cancelled("batch:r1", token)
    assert (await mb.lookup("batch", "r1")).state is MailboxState.PENDING
