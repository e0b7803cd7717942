"""The ``gcp-pubsub`` transport: a :class:`~sluiceway.broker.base.Broker` over Pub/Sub.

Each configured topic entry names one subscription (``subscriber_id``, the processor's queue
name). The processor's ingest, gates, lanes, worker pools and workers run unchanged; this
module maps their steps onto the subscription:

- a puller per subscription (:mod:`.pubsub_feed`) pulls (unary ``Pull``) only when ingest
  asked for more than it holds, at most ``batch_size`` unclaimed messages at a time; pulled
  messages get a short ack deadline (the hold) at once. Ingest reads them as envelopes
  (:mod:`.pubsub_messages`) and applies the queue gates and their budget on every poll, so a
  budget change reaches the messages held here at the next poll, with no stream to restart;
- ``claim`` takes a message for a worker and sets its ack deadline to the lease; a lease
  loop extends the deadlines of claimed messages until they end;
- a message the gates refuse or hold is simply not claimed: its hold ends and Pub/Sub
  delivers it again after the hold (a nack after a delay, with no task per message);
- ``ack`` publishes the result to the result topic (batched per loop turn) and acknowledges
  the message only once the publish is confirmed; ``release`` nacks (deadline 0);
  ``retry_after`` sets the deadline to the worker's backoff (Pub/Sub caps a deadline at
  600 s: a longer backoff keeps the message leased here, re-extended by the lease loop,
  until the rest fits);
- an unreadable message is acknowledged and logged with its message id (ingest counts it in
  ``invalid_entries_total``); one whose id can be read gets an error result.

Cancellation markers, backlog counts and result lists do not exist on Pub/Sub: ``cancel``
marks requests of this process only, ``backlog`` / ``count_due`` raise (the backlog gauges
then say their source is unavailable), ``pop_result`` raises (read results with a
subscription on the result topic). A crash between a result's publish and its ack repeats
that result with the same ``request_token``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from sluiceway.broker.base import (
    ActiveMarker,
    BrokerOptions,
    Claim,
    ClaimAsk,
    ClaimOutcome,
    Entry,
    RenewOutcome,
    ResultWrite,
)
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, PeekOrder
from sluiceway.broker.pubsub_api import GrpcPubSub, PubSubApi, api_exceptions
from sluiceway.broker.pubsub_batch import RpcBatcher
from sluiceway.broker.pubsub_feed import HeldMessage, SubscriptionFeed, split_deferred
from sluiceway.broker.pubsub_health import Standing
from sluiceway.broker.pubsub_messages import TOKEN_ATTRIBUTE, subscription_path, topic_path
from sluiceway.broker.pubsub_settings import (
    MAX_ACK_DEADLINE,
    PubSubSettings,
    pubsub_settings,
    topic_entries,
)
from sluiceway.clock import Clock, RealClock
from sluiceway.errors import BrokerError, ConfigError

__all__ = ["PubSubBroker", "open_pubsub_broker"]

_NO_RESULT_LISTS = "results go to a Pub/Sub topic: read them with a subscription"

log = logging.getLogger(__name__)


class PubSubBroker:
    """:class:`~sluiceway.broker.base.Broker` over Pub/Sub subscriptions (module docstring)."""

    fixed_peek_order = True  # peek ignores its order: Pub/Sub stays about first in, first out

    def __init__(self, api: PubSubApi, settings: PubSubSettings, *, clock: Clock) -> None:
        self._api = api
        self.settings = settings
        self._clock = clock
        self._subs: dict[str, SubscriptionFeed] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._retries: OrderedDict[str, int] = OrderedDict()  # message id -> retries scheduled
        self._active: dict[str, str] = {}  # request id -> token (producers of this process)
        self._cancelled: dict[str, str] = {}
        self._closed = False
        self._publisher: RpcBatcher[str, tuple[bytes, Mapping[str, str]]] = RpcBatcher(api.publish)
        self._acker: RpcBatcher[str, str] = RpcBatcher(api.acknowledge)
        self._deadlines: RpcBatcher[tuple[str, int], str] = RpcBatcher(self._send_deadlines)
        self._tasks.append(asyncio.create_task(self._lease_loop(), name="pubsub-leases"))

    async def _send_deadlines(self, key: tuple[str, int], ack_ids: Sequence[str]) -> None:
        await self._api.modify_ack_deadline(key[0], ack_ids, key[1])

    # -- subscriptions ----------------------------------------------------------------------

    async def check(self, queues: Sequence[tuple[str, str]]) -> None:
        """Fail with :class:`ConfigError` naming the field when a subscription or the result
        topic does not exist; ``queues`` pairs each subscription with its config field."""
        try:
            for queue, where in queues:
                sub = self._sub(queue)
                try:
                    sub.info = await self._api.subscription(sub.path)
                except api_exceptions.NotFound:
                    message = f"subscription {sub.path} does not exist"
                    raise ConfigError(message, field=where) from None
            try:
                await self._api.check_topic(self.settings.result_topic)
            except api_exceptions.NotFound:
                message = f"topic {self.settings.result_topic} does not exist"
                raise ConfigError(message, field="result_topic_id") from None
        except api_exceptions.GoogleAPICallError as exc:
            raise BrokerError(f"Pub/Sub is not reachable: {exc}") from exc

    def _sub(self, queue: str) -> SubscriptionFeed:
        sub = self._subs.get(queue)
        if sub is None:
            sub = self._subs[queue] = SubscriptionFeed(
                queue,
                subscription_path(self.settings.project, queue),
                self._api,
                self.settings,
                self._set_deadline,
                lambda message_id: self._retries.get(message_id, 0),
            )
            self._tasks.append(asyncio.create_task(sub.run(), name=f"pull-{queue}"))
        return sub

    async def _set_deadline(self, subscription: str, seconds: int, ack_id: str) -> None:
        await self._deadlines.submit((subscription, seconds), ack_id)

    # -- consumer side ----------------------------------------------------------------------

    async def peek(
        self, queue: str, limit: int, *, offset: int = 0, order: PeekOrder = EARLIEST_DEADLINE
    ) -> list[Entry]:
        """The messages held for ``queue`` by deadline (:class:`SubscriptionFeed`); ``order``
        is ignored: Pub/Sub delivers about oldest first and ``batch_size`` are held at most."""
        return await self._sub(queue).peek(limit, offset)

    async def claim(
        self, entry: Entry, *, key: str, owner: str, lease_until: float
    ) -> Claim | None:
        [claim] = await self._claim_all([(entry, key, owner, lease_until)])
        return claim

    async def claim_many(self, asks: Sequence[ClaimAsk]) -> list[ClaimOutcome]:
        """Claim a batch with one deadline change for all of it (per subscription)."""
        claims = await self._claim_all([(a.entry, a.key, a.owner, a.lease_until) for a in asks])
        return [
            ClaimOutcome(claim, claim is not None and self._is_cancelled(ask))
            for ask, claim in zip(asks, claims, strict=True)
        ]

    def _is_cancelled(self, ask: ClaimAsk) -> bool:
        return self._cancelled.get(ask.request_id) == ask.request_token

    async def _claim_all(self, asks: Sequence[tuple[Entry, str, str, float]]) -> list[Claim | None]:
        """Take each message and set its ack deadline to the lease; a message whose deadline
        change fails (with exactly-once delivery: no longer ours) is not claimed."""
        claims = [self._sub(ask[0].queue).take(*ask) for ask in asks]
        lease = self.settings.lease_seconds
        changes = [
            self._deadlines.submit((self._subs[c.queue].path, lease), self._ack_id(c))
            for c in claims
            if c is not None
        ]
        outcomes = iter(await asyncio.gather(*changes, return_exceptions=True))
        out: list[Claim | None] = []
        for claim in claims:
            failed = claim is not None and isinstance(next(outcomes), Exception)
            if claim is not None and failed:
                _, message = self._subs[claim.queue].claimed.pop(claim.key)
                log.warning("claiming message %s failed", message.received.message_id)
                claim = None
            out.append(claim)
        return out

    def _ack_id(self, claim: Claim) -> str:
        return self._subs[claim.queue].claimed[claim.key][1].received.ack_id

    def _owned(self, claim: Claim) -> tuple[SubscriptionFeed, HeldMessage] | None:
        sub = self._subs.get(claim.queue)
        message = None if sub is None else sub.owned(claim)
        return None if sub is None or message is None else (sub, message)

    async def renew(self, claim: Claim, *, lease_until: float) -> RenewOutcome:
        """The lease loop extends ack deadlines itself; this reports whether we still hold it."""
        return RenewOutcome.RENEWED if self._owned(claim) else RenewOutcome.MISSING

    async def ack(self, claim: Claim, result: ResultWrite) -> bool:
        """Publish the result, wait for its confirmation, then acknowledge the message."""
        owned = self._owned(claim)
        if owned is None:
            return False
        sub, message = owned
        if not await self._fence(sub, message):
            sub.claimed.pop(claim.key, None)
            return False
        topic = topic_path(self.settings.project, result.destination)
        try:
            await self._publisher.submit(topic, (result.record.encode(), {}))
        except Exception as exc:
            text = f"publishing the result of {result.request_id} failed: {exc}"
            raise BrokerError(text) from exc
        sub.claimed.pop(claim.key, None)
        self._forget_markers(result.request_id, result.request_token)
        try:
            await self._acker.submit(sub.path, message.received.ack_id)
        except Exception as exc:  # the message comes back and its result is published again
            log.warning("ack of message %s failed: %s", message.received.message_id, exc)
        return True

    async def _fence(self, sub: SubscriptionFeed, message: HeldMessage) -> bool:
        """With exactly-once delivery a deadline change fails once the message was handed to
        another consumer: then publish nothing. Without it, no RPC can tell, so this passes."""
        if sub.info is None or not sub.info.exactly_once:
            return True
        try:
            await self._api.modify_ack_deadline(
                sub.path, [message.received.ack_id], self.settings.lease_seconds
            )
        except Exception as exc:
            log.warning("message %s is no longer ours: %s", message.received.message_id, exc)
            return False
        return True

    async def release(self, claim: Claim) -> bool:
        """Nack: Pub/Sub delivers the message again at once."""
        owned = self._owned(claim)
        if owned is None:
            return False
        sub, message = owned
        del sub.claimed[claim.key]
        await self._deadlines.submit((sub.path, 0), message.received.ack_id)
        return True

    async def retry_after(self, claim: Claim, *, member: str, due: float) -> bool:
        """Delay the message's next delivery by the worker's backoff (``due``, scaled)."""
        owned = self._owned(claim)
        if owned is None:
            return False
        sub, message = owned
        del sub.claimed[claim.key]
        self._remember_retries(message.received.message_id, member)
        delay = max(0.0, self._clock.to_wall(due - self._clock.now()))
        if delay > MAX_ACK_DEADLINE:
            sub.deferred[message.received.ack_id] = time.monotonic() + delay
            return True
        await self._deadlines.submit((sub.path, math.ceil(delay)), message.received.ack_id)
        return True

    def _remember_retries(self, message_id: str, member: str) -> None:
        internal = json.loads(member).get("internal", {})
        self._retries[message_id] = int(internal.get("retry_count", 0))
        self._retries.move_to_end(message_id)
        while len(self._retries) > 50_000:
            self._retries.popitem(last=False)

    async def move_due_retries(self, now: float, limit: int, *, fallback_queue: str) -> int:
        return 0  # Pub/Sub delivers a delayed message again by itself

    async def next_retry_due(self) -> float | None:
        return None

    async def reclaim_expired(self, queue: str, now: float, limit: int) -> int:
        return 0  # Pub/Sub delivers a message again once its ack deadline lapses

    async def quarantine(self, entry: Entry, *, reason: str = "", now: float = 0.0) -> bool:
        """Acknowledge an unreadable message so it is never delivered again; log its id and
        ``reason`` (Pub/Sub has no side list to keep it in)."""
        sub = self._sub(entry.queue)
        message = sub.unclaimed.pop(entry.member, None)
        if message is None:
            return False
        log.warning(
            "acknowledged unreadable message %s of %s: %s",
            message.received.message_id,
            sub.path,
            reason or "unreadable",
        )
        await self._acker.submit(sub.path, message.received.ack_id)
        return True

    async def backlog(self, queue: str) -> int:
        raise BrokerError("Pub/Sub has no backlog count a consumer can read")

    async def count_due(self, queue: str, limits: Sequence[float]) -> list[int]:
        raise BrokerError("Pub/Sub has no deadline index")

    async def is_cancelled(self, request_id: str, request_token: str) -> bool:
        return self._cancelled.get(request_id) == request_token

    async def wait_for_work(self, queues: Sequence[str], block_for: float) -> bool:
        subs = [self._sub(q) for q in queues]
        if any(sub.unseen for sub in subs):
            return True
        waits = [asyncio.ensure_future(sub.arrival()) for sub in subs]
        try:
            done, _ = await asyncio.wait(waits, timeout=block_for)
        finally:
            for w in waits:
                w.cancel()
        return bool(done)

    # -- producer side ----------------------------------------------------------------------

    async def enqueue(
        self,
        queue: str,
        entries: Sequence[tuple[str, float]],
        *,
        markers: Sequence[ActiveMarker] = (),
    ) -> int:
        """Publish each envelope's request object to the topic of subscription ``queue``,
        with its request token as an attribute."""
        sub = self._sub(queue)
        if sub.info is None:
            sub.info = await self._api.subscription(sub.path)
        messages = [_publishable(member) for member, _ in entries]
        ids = await self._api.publish(sub.info.topic, messages)
        for marker in markers:
            self._active[marker.request_id] = marker.request_token
            self._cancelled.pop(marker.request_id, None)
        return len(ids)

    async def cancel(self, request_id: str, *, expire_after: float) -> bool:
        """Cancel a request submitted through this broker object (no shared marker store)."""
        token = self._active.get(request_id)
        if token is None:
            return False
        self._cancelled[request_id] = token
        return True

    def _forget_markers(self, request_id: str, token: str) -> None:
        if self._active.get(request_id) == token:
            del self._active[request_id]
        if self._cancelled.get(request_id) == token:
            del self._cancelled[request_id]

    async def pop_result(self, destination: str, block_for: float) -> str | None:
        raise BrokerError(_NO_RESULT_LISTS)

    async def result_count(self, destination: str) -> int:
        raise BrokerError(_NO_RESULT_LISTS)

    # Result mailboxes and shared markers have no Pub/Sub counterpart: the coordinator runs on
    # Redis, SQLite or memory, never on this transport.

    async def peek_result(self, destination: str) -> str | None:
        raise BrokerError(_NO_RESULT_LISTS)

    async def wait_for_result(self, destination: str, block_for: float) -> bool:
        raise BrokerError(_NO_RESULT_LISTS)

    async def expire_result(self, destination: str, after: float) -> None:
        raise BrokerError(_NO_RESULT_LISTS)

    async def is_pending(self, request_id: str) -> bool:
        raise BrokerError(_NO_RESULT_LISTS)

    async def revive(self, request_id: str) -> bool:
        raise BrokerError(_NO_RESULT_LISTS)

    # -- leases, health, shutdown -----------------------------------------------------------

    async def _lease_loop(self) -> None:
        period = max(1.0, self.settings.lease_seconds / 3)
        while not self._closed:
            await asyncio.sleep(period)
            for sub in list(self._subs.values()):
                try:
                    await self._extend(sub)
                except Exception as exc:
                    sub.health.failed(time.monotonic(), f"{type(exc).__name__}: {exc}")
                    log.warning("extending leases on %s failed: %s", sub.path, exc)

    async def _extend(self, sub: SubscriptionFeed) -> None:
        lease = self.settings.lease_seconds
        final, deferred = split_deferred(sub.deferred, time.monotonic())
        for ack_id, seconds in final:
            del sub.deferred[ack_id]
            await self._deadlines.submit((sub.path, seconds), ack_id)
        ids = [message.received.ack_id for _, message in sub.claimed.values()] + deferred
        for start in range(0, len(ids), 1000):
            await self._api.modify_ack_deadline(sub.path, ids[start : start + 1000], lease)

    async def ping(self) -> None:
        """Ready while every subscription's last RPCs succeeded (an active probe when none
        ran lately); a denied permission still proves the service answers."""
        for sub in list(self._subs.values()):
            standing = sub.health.standing(time.monotonic())
            if standing is Standing.FAILING:
                raise BrokerError(f"{sub.path}: {sub.health.last_error}")
            if standing is Standing.UNKNOWN:
                await self._probe(sub)

    async def _probe(self, sub: SubscriptionFeed) -> None:
        try:
            await self._api.subscription(sub.path)
        except api_exceptions.PermissionDenied:
            pass
        except Exception as exc:
            sub.health.failed(time.monotonic(), f"{type(exc).__name__}: {exc}")
            raise BrokerError(f"{sub.path}: {exc}") from exc
        sub.health.succeeded(time.monotonic())

    async def aclose(self) -> None:
        """Stop pulling, hand held messages back at once (nack), close the clients."""
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for sub in self._subs.values():
            held = [m.received.ack_id for m in sub.unclaimed.values()]
            sub.unclaimed.clear()
            if held:
                try:
                    await self._api.modify_ack_deadline(sub.path, held, 0)
                except Exception as exc:
                    log.warning("returning %d held messages failed: %s", len(held), exc)
        await self._publisher.aclose()
        await self._acker.aclose()
        await self._deadlines.aclose()
        await self._api.aclose()


def _publishable(member: str) -> tuple[bytes, Mapping[str, str]]:
    doc = json.loads(member)
    token = doc.get("internal", {}).get("request_token", "")
    attributes = {TOKEN_ATTRIBUTE: token} if token else {}
    return json.dumps(doc["data"]).encode(), attributes


async def open_pubsub_broker(options: BrokerOptions, api: PubSubApi | None = None) -> PubSubBroker:
    """Open the broker and check that every subscription and the result topic exist."""
    settings = pubsub_settings(options)
    clock = options.clock or RealClock(options.time_scale)
    broker = PubSubBroker(api or GrpcPubSub(), settings, clock=clock)
    try:
        await broker.check(topic_entries(options.settings))
    except BaseException:
        await broker.aclose()
        raise
    return broker
