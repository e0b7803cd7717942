"""An in-memory Pub/Sub for what the emulator lacks: exactly-once delivery (an ack id dies
when its deadline lapses; using it then fails) and delivery attempts counted by a subscription
with a dead-letter policy (moved to the dead-letter topic after ``max_attempts``)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from google.api_core import exceptions

from sluiceway.broker.pubsub_api import SubscriptionInfo
from sluiceway.broker.pubsub_messages import Received


@dataclass
class _Stored:
    message_id: str
    data: bytes
    attributes: Mapping[str, str]
    attempts: int = 0
    ack_id: str = ""
    deadline: float = 0.0  # while leased: when the lease lapses (fake time)


@dataclass
class FakeSubscription:
    topic: str
    exactly_once: bool = False
    dead_letter_topic: str = ""
    max_attempts: int = 5
    messages: list[_Stored] = field(default_factory=list)


class FakePubSub:
    """:class:`~sluiceway.broker.pubsub_api.PubSubApi` in memory, on a time moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0
        self.topics: dict[str, list[tuple[bytes, Mapping[str, str]]]] = {}
        self.subscriptions: dict[str, FakeSubscription] = {}
        self._ids = itertools.count(1)

    # -- set-up and inspection ---------------------------------------------------------------

    def add(self, subscription: str, topic: str, **kw: object) -> FakeSubscription:
        self.topics.setdefault(topic, [])
        sub = self.subscriptions[subscription] = FakeSubscription(topic, **kw)  # type: ignore[arg-type]
        return sub

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def published(self, topic: str) -> list[bytes]:
        return [data for data, _ in self.topics[topic]]

    # -- the protocol --------------------------------------------------------------------------

    async def publish(
        self, topic: str, messages: Sequence[tuple[bytes, Mapping[str, str]]]
    ) -> list[str]:
        if topic not in self.topics:
            raise exceptions.NotFound(f"topic {topic}")
        self.topics[topic].extend(messages)
        ids = [str(next(self._ids)) for _ in messages]
        for sub in self.subscriptions.values():
            if sub.topic == topic:
                sub.messages.extend(
                    _Stored(i, d, a) for i, (d, a) in zip(ids, messages, strict=True)
                )
        return ids

    async def pull(self, subscription: str, max_messages: int, *, wait: float) -> list[Received]:
        sub = self._sub(subscription)
        out: list[Received] = []
        for stored in list(sub.messages):
            if len(out) >= max_messages or stored.deadline > self.now:
                continue
            if self._dead_lettered(sub, stored):
                continue
            stored.attempts += 1
            stored.ack_id = f"{stored.message_id}:{stored.attempts}"
            stored.deadline = self.now + 10
            attempt = stored.attempts if sub.dead_letter_topic else 0
            out.append(
                Received(stored.ack_id, stored.message_id, stored.data, stored.attributes, attempt)
            )
        if not out:
            await asyncio.sleep(min(wait, 0.01))  # a server-side wait, short for tests
        return out

    def _dead_lettered(self, sub: FakeSubscription, stored: _Stored) -> bool:
        if not sub.dead_letter_topic or stored.attempts < sub.max_attempts:
            return False
        sub.messages.remove(stored)
        self.topics[sub.dead_letter_topic].append((stored.data, stored.attributes))
        return True

    def _leased(self, sub: FakeSubscription, ack_id: str) -> _Stored:
        for stored in sub.messages:
            if stored.ack_id == ack_id and stored.deadline > self.now:
                return stored
        if sub.exactly_once:
            raise exceptions.FailedPrecondition(f"ack id {ack_id} is no longer valid")
        return _Stored("", b"", {})  # at-least-once: a stale ack id is silently ignored

    async def modify_ack_deadline(
        self, subscription: str, ack_ids: Sequence[str], seconds: int
    ) -> None:
        sub = self._sub(subscription)
        if not 0 <= seconds <= 600:
            raise exceptions.InvalidArgument(f"ack deadline {seconds} is outside 0..600")
        for ack_id in ack_ids:
            self._leased(sub, ack_id).deadline = self.now + seconds

    async def acknowledge(self, subscription: str, ack_ids: Sequence[str]) -> None:
        sub = self._sub(subscription)
        for ack_id in ack_ids:
            stored = self._leased(sub, ack_id)
            if stored in sub.messages:
                sub.messages.remove(stored)

    async def subscription(self, subscription: str) -> SubscriptionInfo:
        sub = self._sub(subscription)
        return SubscriptionInfo(sub.topic, 10, sub.exactly_once, bool(sub.dead_letter_topic))

    async def check_topic(self, topic: str) -> None:
        if topic not in self.topics:
            raise exceptions.NotFound(f"topic {topic}")

    async def aclose(self) -> None:
        pass

    def _sub(self, subscription: str) -> FakeSubscription:
        sub = self.subscriptions.get(subscription)
        if sub is None:
            raise exceptions.NotFound(f"subscription {subscription}")
        return sub
