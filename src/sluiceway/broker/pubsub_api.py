"""The Pub/Sub RPCs the broker uses, behind one small protocol.

:class:`GrpcPubSub` speaks to Google Cloud Pub/Sub (or its emulator, when
``PUBSUB_EMULATOR_HOST`` is set) through the library's asyncio clients, using only unary RPCs:
``Pull``, ``ModifyAckDeadline``, ``Acknowledge``, ``Publish``. The library's high-level
``subscribe()`` is not used: its lease manager extends every message it holds, while the
broker decides per message (held for admission, running, waiting out a backoff). Tests of what
the emulator lacks (exactly-once delivery, delivery attempts) use a fake of this protocol.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import grpc  # type: ignore[import-untyped]
from google.api_core import exceptions as api_exceptions
from google.pubsub_v1 import PublisherAsyncClient, PubsubMessage, SubscriberAsyncClient
from google.pubsub_v1.services.publisher.transports import PublisherGrpcAsyncIOTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcAsyncIOTransport

from sluiceway.broker.pubsub_messages import Received

__all__ = ["GrpcPubSub", "PubSubApi", "SubscriptionInfo", "api_exceptions"]

EMULATOR_ENV = "PUBSUB_EMULATOR_HOST"


@dataclass(frozen=True, slots=True)
class SubscriptionInfo:
    """What the broker needs to know of a subscription."""

    topic: str
    ack_deadline_seconds: int
    exactly_once: bool
    dead_letter: bool


class PubSubApi(Protocol):
    """Unary Pub/Sub RPCs. Errors are ``google.api_core.exceptions`` as the library raises."""

    async def pull(self, subscription: str, max_messages: int, *, wait: float) -> list[Received]:
        """Up to ``max_messages`` messages; none after a server-side wait of at most ``wait``
        wall seconds (or ``DeadlineExceeded``)."""
        ...

    async def modify_ack_deadline(
        self, subscription: str, ack_ids: Sequence[str], seconds: int
    ) -> None:
        """Set the ack deadline of each message to ``seconds`` from now (0 = nack)."""
        ...

    async def acknowledge(self, subscription: str, ack_ids: Sequence[str]) -> None: ...

    async def publish(
        self, topic: str, messages: Sequence[tuple[bytes, Mapping[str, str]]]
    ) -> list[str]:
        """Publish in one request; the message ids once the service has stored them."""
        ...

    async def subscription(self, subscription: str) -> SubscriptionInfo: ...

    async def check_topic(self, topic: str) -> None:
        """Raise ``NotFound`` when the topic does not exist."""
        ...

    async def aclose(self) -> None: ...


def _channel_kwargs() -> dict[str, object]:
    host = os.environ.get(EMULATOR_ENV)
    return {} if not host else {"channel": grpc.aio.insecure_channel(host)}


class GrpcPubSub:
    """:class:`PubSubApi` over the library's asyncio GAPIC clients."""

    def __init__(self) -> None:
        sub_transport = SubscriberGrpcAsyncIOTransport(**_channel_kwargs())  # type: ignore[arg-type]
        pub_transport = PublisherGrpcAsyncIOTransport(**_channel_kwargs())  # type: ignore[arg-type]
        self._sub = SubscriberAsyncClient(transport=sub_transport)
        self._pub = PublisherAsyncClient(transport=pub_transport)

    async def pull(self, subscription: str, max_messages: int, *, wait: float) -> list[Received]:
        response = await self._sub.pull(
            subscription=subscription, max_messages=max_messages, timeout=wait
        )
        return [
            Received(
                ack_id=r.ack_id,
                message_id=r.message.message_id,
                data=bytes(r.message.data),
                attributes=dict(r.message.attributes),
                delivery_attempt=r.delivery_attempt,
                publish_time=r.message.publish_time.timestamp(),
            )
            for r in response.received_messages
        ]

    async def modify_ack_deadline(
        self, subscription: str, ack_ids: Sequence[str], seconds: int
    ) -> None:
        await self._sub.modify_ack_deadline(
            subscription=subscription, ack_ids=list(ack_ids), ack_deadline_seconds=seconds
        )

    async def acknowledge(self, subscription: str, ack_ids: Sequence[str]) -> None:
        await self._sub.acknowledge(subscription=subscription, ack_ids=list(ack_ids))

    async def publish(
        self, topic: str, messages: Sequence[tuple[bytes, Mapping[str, str]]]
    ) -> list[str]:
        batch = [PubsubMessage(data=data, attributes=dict(attrs)) for data, attrs in messages]
        response = await self._pub.publish(topic=topic, messages=batch)
        return list(response.message_ids)

    async def subscription(self, subscription: str) -> SubscriptionInfo:
        sub = await self._sub.get_subscription(subscription=subscription)
        return SubscriptionInfo(
            topic=sub.topic,
            ack_deadline_seconds=sub.ack_deadline_seconds,
            exactly_once=sub.enable_exactly_once_delivery,
            dead_letter=bool(sub.dead_letter_policy.dead_letter_topic),
        )

    async def check_topic(self, topic: str) -> None:
        await self._pub.get_topic(topic=topic)

    # Administration (tests, benchmarks, operators' scripts); the broker never creates.

    async def create_topic(self, topic: str) -> None:
        await self._pub.create_topic(name=topic)

    async def delete_topic(self, topic: str) -> None:
        await self._pub.delete_topic(topic=topic)

    async def delete_subscription(self, subscription: str) -> None:
        await self._sub.delete_subscription(subscription=subscription)

    async def create_subscription(
        self, subscription: str, topic: str, *, ack_deadline_seconds: int = 10
    ) -> None:
        await self._sub.create_subscription(
            name=subscription, topic=topic, ack_deadline_seconds=ack_deadline_seconds
        )

    async def aclose(self) -> None:
        await self._sub.transport.close()  # type: ignore[no-untyped-call]
        await self._pub.transport.close()  # type: ignore[no-untyped-call]
