"""The Pub/Sub broker against the emulator: the broker cases that exist on Pub/Sub.

Applies: delivery as envelopes (attributes merged, a token every redelivery shares), claim,
release (redelivered at once), a refused message coming back after its hold, a retry waiting
out its backoff through the ack deadline, ack only after the result publish is confirmed,
unreadable messages acknowledged once, readiness from the pullers' RPCs, start-up checks.
Skipped from the shared broker suite, because Pub/Sub has no such thing: peek order across a
whole backlog and offsets beyond what one consumer holds, backlog and due counts, claim
fencing between consumers (Pub/Sub leases messages itself; exactly-once fencing is tested
against a fake), the retry set and its mover, the reclaimer, result lists (``pop_result``),
and shared cancellation markers.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest
from pubsub_harness import PROJECT, Topics, new_topics, request_body

from sluiceway.broker.base import Claim, Entry, ResultWrite, claim_key
from sluiceway.broker.pubsub import PubSubBroker
from sluiceway.clock import RealClock
from sluiceway.errors import BrokerError, ConfigError
from sluiceway.localservices import (
    PubSubEmulator,
    ServiceUnavailable,
    private_pubsub_emulator,
    pubsub_emulator_installed,
)
from sluiceway.wire import decode_envelope, encode_envelope

pytestmark = pytest.mark.pubsub

TEAM = "batch"


@pytest.fixture
async def topics(pubsub_emulator: PubSubEmulator) -> AsyncIterator[Topics]:
    t = await new_topics([TEAM])
    yield t
    await t.aclose()


@pytest.fixture
async def broker(topics: Topics) -> AsyncIterator[PubSubBroker]:
    b = await topics.broker([TEAM], RealClock(), claim_lease_ttl_seconds=5)
    yield b
    await b.aclose()


async def entries(broker: PubSubBroker, queue: str, count: int, within: float = 15) -> list[Entry]:
    """Peek until ``count`` messages are held (the puller fills in the background)."""
    end = time.monotonic() + within
    while len(got := await broker.peek(queue, 10)) < count:
        assert time.monotonic() < end, f"only {len(got)} of {count} messages arrived"
        await broker.wait_for_work([queue], 1.0)
    return got


async def take(broker: PubSubBroker, entry: Entry, owner: str = "a" * 16) -> Claim:
    envelope = decode_envelope(entry.member)
    key = claim_key(envelope.id, envelope.request_token)
    claim = await broker.claim(entry, key=key, owner=owner, lease_until=time.time() + 30)
    assert claim is not None
    return claim


def result_for(entry: Entry, destination: str) -> ResultWrite:
    envelope = decode_envelope(entry.member)
    record = json.dumps(
        {"id": envelope.id, "status_code": 200, "payload": "ok", "request_token": "t"}
    )
    return ResultWrite(destination, record, envelope.id, envelope.request_token)


async def test_a_message_becomes_an_envelope_with_attributes_in_metadata(
    topics: Topics, broker: PubSubBroker
) -> None:
    body = {**request_body("r-1", now=time.time()), "metadata": {"team": "body", "x": "1"}}
    [message_id] = await topics.publish_raw(TEAM, [json.dumps(body).encode()], {"team": "attr"})
    queue = topics.subscription(TEAM)
    [entry] = await entries(broker, queue, 1)
    envelope = decode_envelope(entry.member)
    assert envelope.id == "r-1" and envelope.request_kind == "pubsub"
    assert dict(envelope.data.metadata) == {"team": "attr", "x": "1"}
    assert envelope.internal.transport_correlation_id == message_id
    assert envelope.internal.request_queue_name == queue
    assert entry.score == body["deadline"]


async def test_release_redelivers_at_once_with_the_same_token(
    topics: Topics, broker: PubSubBroker
) -> None:
    await topics.publish(TEAM, 1, now=time.time())
    queue = topics.subscription(TEAM)
    [entry] = await entries(broker, queue, 1)
    first = decode_envelope(entry.member).request_token
    claim = await take(broker, entry)
    assert await broker.peek(queue, 10) == []
    assert await broker.release(claim)
    [again] = await entries(broker, queue, 1, within=5)
    assert decode_envelope(again.member).request_token == first
    assert not await broker.release(claim)  # already released: nothing to do


async def test_ack_publishes_the_result_then_the_message_is_gone(
    topics: Topics, broker: PubSubBroker
) -> None:
    await topics.publish(TEAM, 2, now=time.time())
    queue = topics.subscription(TEAM)
    got = await entries(broker, queue, 2)
    for entry in got:
        claim = await take(broker, entry)
        assert await broker.ack(claim, result_for(entry, topics.result_topic))
    results = await topics.results(2)
    assert sorted(r.id for r in results) == ["batch-0000", "batch-0001"]
    assert await broker.peek(queue, 10) == []  # asks the puller for more
    # Longer than the lease: an unacked message would be delivered again by now.
    assert not await broker.wait_for_work([queue], broker.settings.lease_seconds + 3.0)


async def test_no_ack_when_the_result_publish_fails(topics: Topics, broker: PubSubBroker) -> None:
    await topics.publish(TEAM, 1, now=time.time())
    queue = topics.subscription(TEAM)
    [entry] = await entries(broker, queue, 1)
    claim = await take(broker, entry)
    await topics.api.delete_topic(f"projects/{PROJECT}/topics/{topics.result_topic}")
    with pytest.raises(BrokerError, match="publishing the result"):
        await broker.ack(claim, result_for(entry, topics.result_topic))
    assert await broker.release(claim)  # what the worker does after a failed ack
    [again] = await entries(broker, queue, 1, within=5)
    assert decode_envelope(again.member).id == "batch-0000"


async def test_a_message_nobody_claims_comes_back_after_its_hold(
    topics: Topics, broker: PubSubBroker
) -> None:
    await topics.publish(TEAM, 1, now=time.time())
    queue = topics.subscription(TEAM)
    [entry] = await entries(broker, queue, 1)
    hold = broker.settings.hold_seconds
    started = time.monotonic()
    # Refused: not claimed. It stops being offered, and Pub/Sub delivers it again.
    while await broker.peek(queue, 10) == [entry]:
        await broker.wait_for_work([queue], 0.2)
    [again] = await entries(broker, queue, 1, within=hold + 10)
    assert time.monotonic() - started >= hold - 2.5
    assert decode_envelope(again.member).id == "batch-0000"


async def test_retry_waits_out_the_backoff_through_the_ack_deadline(
    topics: Topics, broker: PubSubBroker
) -> None:
    await topics.publish(TEAM, 1, now=time.time())
    queue = topics.subscription(TEAM)
    [entry] = await entries(broker, queue, 1)
    claim = await take(broker, entry)
    envelope = decode_envelope(entry.member).with_retry_count(1)
    started = time.monotonic()
    assert await broker.retry_after(claim, member=encode_envelope(envelope), due=time.time() + 3)
    [again] = await entries(broker, queue, 1, within=15)
    assert time.monotonic() - started >= 2.5
    assert decode_envelope(again.member).internal.retry_count == 1  # remembered here


async def test_unreadable_messages_are_acked_once(topics: Topics, broker: PubSubBroker) -> None:
    await topics.publish_raw(TEAM, [b"not json", b'{"no": "id"}'])
    queue = topics.subscription(TEAM)
    got = await entries(broker, queue, 2)
    for entry in got:
        assert await broker.quarantine(entry)
        assert not await broker.quarantine(entry)
    assert await broker.peek(queue, 10) == []
    assert not await broker.wait_for_work([queue], broker.settings.hold_seconds + 3.0)


async def test_ping_follows_the_pullers_rpcs(topics: Topics, broker: PubSubBroker) -> None:
    queue = topics.subscription(TEAM)
    await broker.peek(queue, 10)  # starts the puller; its first pull proves the subscription
    await broker.ping()
    await topics.api.delete_subscription(f"projects/{PROJECT}/subscriptions/{queue}")
    end = time.monotonic() + 25  # a pull already waiting ends within 10 s
    while True:
        await broker.peek(queue, 10)
        try:
            await broker.ping()
        except BrokerError as exc:
            assert "NotFound" in str(exc)
            break
        assert time.monotonic() < end, "ping kept answering after the subscription went away"
        await asyncio.sleep(0.2)


async def test_a_missing_subscription_fails_at_start_naming_the_field(topics: Topics) -> None:
    with pytest.raises(ConfigError) as caught:
        await topics.broker([TEAM, "nope"], RealClock())
    assert caught.value.field == "topics[1].subscriber_id"


def test_the_launcher_says_why_when_the_emulator_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert not pubsub_emulator_installed()
    with pytest.raises(ServiceUnavailable, match="not installed"), private_pubsub_emulator():
        pass
