"""The Pub/Sub broker over a fake service, for what the emulator lacks: exactly-once delivery
(a result is never published for a message that was handed to another consumer) and delivery
attempts (the retry count of a subscription with a dead-letter policy)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from google.api_core import exceptions

from sluiceway.broker.base import BrokerOptions, Claim, Entry, ResultWrite, claim_key
from sluiceway.broker.peek_order import LATEST_DEADLINE
from sluiceway.broker.pubsub import PubSubBroker, open_pubsub_broker
from sluiceway.broker.pubsub_api import SubscriptionInfo
from sluiceway.broker.quota_redis import RedisQuotaStore
from sluiceway.broker.quota_stores import open_quota_stores
from sluiceway.clock import VirtualClock
from sluiceway.errors import BrokerError, ConfigError
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.wire import decode_envelope

from .pubsub_fake import FakePubSub

PROJECT = "proj"
SUB = "requests-sub"
SUB_PATH = f"projects/{PROJECT}/subscriptions/{SUB}"
TOPIC = f"projects/{PROJECT}/topics/requests"
RESULTS = f"projects/{PROJECT}/topics/results"
DEAD = f"projects/{PROJECT}/topics/dead"


def options(**extra: object) -> BrokerOptions:
    settings = {
        "project_id": PROJECT,
        "result_topic_id": "results",
        "batch_size": 10,
        "claim_lease_ttl_seconds": 30,
        "topics": [{"subscriber_id": SUB}],
        **extra,
    }
    return BrokerOptions(settings=settings, clock=VirtualClock())


def body(request_id: str) -> bytes:
    return json.dumps({"id": request_id, "deadline": 2_000_000_000, "payload": {}}).encode()


@pytest.fixture
def fake() -> FakePubSub:
    f = FakePubSub()
    f.topics[RESULTS] = []
    f.topics[DEAD] = []
    return f


async def open_on(fake: FakePubSub) -> PubSubBroker:
    return await open_pubsub_broker(options(), fake)


@pytest.fixture
async def broker(fake: FakePubSub) -> AsyncIterator[PubSubBroker]:
    fake.add(SUB_PATH, TOPIC, exactly_once=True)
    b = await open_on(fake)
    yield b
    await b.aclose()


async def held(broker: PubSubBroker, count: int) -> list[Entry]:
    end = time.monotonic() + 5
    while len(got := await broker.peek(SUB, 10)) < count:
        assert time.monotonic() < end
        await broker.wait_for_work([SUB], 0.05)
    return got


async def take(broker: PubSubBroker, entry: Entry) -> Claim:
    envelope = decode_envelope(entry.member)
    key = claim_key(envelope.id, envelope.request_token)
    claim = await broker.claim(entry, key=key, owner="o" * 16, lease_until=0.0)
    assert claim is not None
    return claim


def result(entry: Entry) -> ResultWrite:
    envelope = decode_envelope(entry.member)
    record = json.dumps({"id": envelope.id, "status_code": 200, "payload": "ok"})
    return ResultWrite("results", record, envelope.id, envelope.request_token)


async def test_exactly_once_publishes_nothing_for_a_message_another_consumer_got(
    fake: FakePubSub, broker: PubSubBroker
) -> None:
    await fake.publish(TOPIC, [(body("r-1"), {})])
    [entry] = await held(broker, 1)
    claim = await take(broker, entry)
    fake.advance(broker.settings.lease_seconds + 1)  # our lease lapsed (a long pause)
    other = await open_on(fake)
    try:
        [again] = await held(other, 1)
        other_claim = await take(other, again)
        assert not await broker.ack(claim, result(entry))  # fenced: nothing published
        assert fake.published(RESULTS) == []
        assert await other.ack(other_claim, result(again))
    finally:
        await other.aclose()
    assert len(fake.published(RESULTS)) == 1
    assert fake.subscriptions[SUB_PATH].messages == []


async def test_exactly_once_acks_after_the_publish(fake: FakePubSub, broker: PubSubBroker) -> None:
    await fake.publish(TOPIC, [(body("r-1"), {})])
    [entry] = await held(broker, 1)
    assert await broker.ack(await take(broker, entry), result(entry))
    assert len(fake.published(RESULTS)) == 1
    assert fake.subscriptions[SUB_PATH].messages == []


async def test_retry_count_comes_from_the_delivery_attempt(fake: FakePubSub) -> None:
    fake.add(SUB_PATH, TOPIC, dead_letter_topic=DEAD, max_attempts=5)
    await fake.publish(TOPIC, [(body("r-1"), {})])
    broker = await open_on(fake)
    try:
        counts = []
        for _ in range(3):
            [entry] = await held(broker, 1)
            counts.append(decode_envelope(entry.member).internal.retry_count)
            assert await broker.release(await take(broker, entry))
        assert counts == [0, 1, 2]
    finally:
        await broker.aclose()


async def test_a_message_past_its_attempts_goes_to_the_dead_letter_topic(fake: FakePubSub) -> None:
    fake.add(SUB_PATH, TOPIC, dead_letter_topic=DEAD, max_attempts=2)
    await fake.publish(TOPIC, [(body("r-1"), {})])
    broker = await open_on(fake)
    try:
        for _ in range(2):
            [entry] = await held(broker, 1)
            assert await broker.release(await take(broker, entry))
        assert await broker.peek(SUB, 10) == []
        await broker.wait_for_work([SUB], 0.1)
        assert fake.published(DEAD) == [body("r-1")]
    finally:
        await broker.aclose()


async def test_a_token_attribute_is_the_request_token(
    fake: FakePubSub, broker: PubSubBroker
) -> None:
    await fake.publish(TOPIC, [(body("r-1"), {"sluiceway-request-token": "t" * 32, "team": "a"})])
    [entry] = await held(broker, 1)
    envelope = decode_envelope(entry.member)
    assert envelope.request_token == "t" * 32
    assert dict(envelope.data.metadata) == {"team": "a"}


async def test_a_missing_result_topic_fails_at_start(fake: FakePubSub) -> None:
    fake.add(SUB_PATH, TOPIC)
    del fake.topics[RESULTS]
    with pytest.raises(ConfigError) as caught:
        await open_on(fake)
    assert caught.value.field == "result_topic_id"


async def test_a_long_backoff_keeps_the_message_leased_here(fake: FakePubSub) -> None:
    fake.add(SUB_PATH, TOPIC)
    clock = VirtualClock()
    broker = await open_pubsub_broker(replace(options(), clock=clock), fake)
    try:
        await fake.publish(TOPIC, [(body("r-1"), {})])
        [entry] = await held(broker, 1)
        claim = await take(broker, entry)
        assert await broker.retry_after(claim, member=entry.member, due=clock.now() + 3600)
        stored = fake.subscriptions[SUB_PATH].messages[0]
        assert fake.now < stored.deadline <= fake.now + 600  # still leased here
        assert await broker.peek(SUB, 10) == []
    finally:
        await broker.aclose()


async def test_an_unreachable_service_fails_at_start_as_a_broker_error(fake: FakePubSub) -> None:
    class Unreachable(FakePubSub):
        async def subscription(self, subscription: str) -> SubscriptionInfo:
            raise exceptions.ServiceUnavailable("connection refused")

    with pytest.raises(BrokerError, match="not reachable"):
        await open_pubsub_broker(options(), Unreachable())


async def test_quota_gates_with_an_address_count_in_redis(fake: FakePubSub) -> None:
    fake.add(SUB_PATH, TOPIC)
    broker = await open_on(fake)
    stores = await open_quota_stores("gcp-pubsub", broker, options())
    try:
        assert isinstance(stores("redis.example:6379"), RedisQuotaStore)  # as upstream
        assert isinstance(stores(""), MemoryQuotaStore)  # no address: this process only
    finally:
        await stores.aclose()
        await broker.aclose()


async def test_it_is_a_broker_whose_mailbox_methods_say_pubsub_has_none(
    broker: PubSubBroker,
) -> None:
    from sluiceway.broker.base import Broker
    from sluiceway.errors import BrokerError

    assert isinstance(broker, Broker)
    for call in (
        broker.peek_result("r"),
        broker.wait_for_result("r", 0),
        broker.expire_result("r", 0),
        broker.is_pending("r"),
        broker.revive("r"),
    ):
        with pytest.raises(BrokerError, match="Pub/Sub topic"):
            await call


async def test_the_peek_order_is_accepted_and_ignored(
    fake: FakePubSub, broker: PubSubBroker
) -> None:
    """Pub/Sub delivers about oldest first: a LATEST_DEADLINE peek reads what the default does."""
    late = json.dumps({"id": "late", "deadline": 2_000_000_100, "payload": {}}).encode()
    await fake.publish(TOPIC, [(body("early"), {}), (late, {})])
    default = await held(broker, 2)
    assert [decode_envelope(e.member).id for e in default] == ["early", "late"]
    assert await broker.peek(SUB, 10, order=LATEST_DEADLINE) == default
    assert await broker.peek(SUB, 1, offset=1, order=LATEST_DEADLINE) == default[1:]
    assert broker.fixed_peek_order  # so the processor does not try to read it newest first
