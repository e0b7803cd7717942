"""The ``gcp-pubsub`` transport: a :class:`~sluiceway.broker.base.Broker` over Pub/Sub.

Each configured topic entry names one subscription (``subscriber_id``, the processor's queue
name). The processor's ingest, gates, lanes, worker pools and workers run unchanged; this
module maps their steps onto the subscription:

- a puller per subscription pulls (unary ``Pull``) only when ingest asked for more than it
  holds, at most ``batch_size`` unclaimed messages at a time; pulled messages get a short ack
  deadline (the hold) at once. Ingest reads them as envelopes (:mod:`.pubsub_messages`) and
  applies the queue gates and their budget on every poll, so a budget change reaches the
  messages held here at the next poll, with no stream to restart;
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
import contextlib
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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
from sluiceway.broker.pubsub_api import GrpcPubSub, PubSubApi, SubscriptionInfo, api_exceptions
from sluiceway.broker.pubsub_batch import RpcBatcher
from sluiceway.broker.pubsub_health import RpcHealth, Standing
from sluiceway.broker.pubsub_messages import (
    TOKEN_ATTRIBUTE,
    Received,
    message_member,
    message_score,
    retry_count_of,
    subscription_path,
    topic_path,
)
from sluiceway.clock import Clock, RealClock
from sluiceway.errors import BrokerError, ConfigError

__all__ = ["MAX_ACK_DEADLINE", "PubSubBroker", "PubSubSettings", "open_pubsub_broker"]

log = logging.getLogger(__name__)

MAX_ACK_DEADLINE = 600  # seconds: Pub/Sub's cap on one ack deadline
_HOLD_MARGIN = 2.0  # wall seconds: stop offering a held message this long before its hold ends
_PULL_WAIT = 10.0  # wall seconds a pull may wait server-side (bounds readiness detection too)
_PULL_ERROR_PAUSE = 1.0  # wall seconds before pulling again after a failed pull
_FIRST_PULL_WAIT = 1.0  # wall seconds the first pull of a subscription may wait (start-up)


@dataclass(frozen=True, slots=True)
class PubSubSettings:
    """``project``: default project for short names; ``result_topic``: full topic name;
    ``lease_seconds``: ack deadline of a claimed message (wall, 3..600); ``hold_seconds``:
    ack deadline of a pulled, unclaimed message (the delay before a refused message comes
    back); ``max_unclaimed``: unclaimed messages held per subscription (``batch_size``)."""

    project: str
    result_topic: str
    lease_seconds: int = 60
    hold_seconds: int = 10
    max_unclaimed: int = 10


@dataclass(slots=True)
class _Message:
    received: Received
    member: str
    score: float
    hold_until: float  # time.monotonic() after which it is no longer offered


@dataclass(slots=True)
class _Subscription:
    queue: str
    path: str
    unclaimed: dict[str, _Message] = field(default_factory=dict)  # member -> message
    claimed: dict[str, tuple[Claim, _Message]] = field(default_factory=dict)  # claim key
    deferred: dict[str, float] = field(default_factory=dict)  # ack id -> due (monotonic)
    wanted: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    first_pull: asyncio.Event = field(default_factory=asyncio.Event)  # one pull has ended
    unseen: int = 0
    health: RpcHealth = field(default_factory=RpcHealth)
    info: SubscriptionInfo | None = None

    def fire_arrived(self) -> None:
        self.arrived.set()
        self.arrived = asyncio.Event()


class PubSubBroker:
    """:class:`~sluiceway.broker.base.Broker` over Pub/Sub subscriptions (module docstring)."""

    def __init__(self, api: PubSubApi, settings: PubSubSettings, *, clock: Clock) -> None:
        self._api = api
        self.settings = settings
        self._clock = clock
        self._subs: dict[str, _Subscription] = {}
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
        for queue, where in queues:
            sub = self._sub(queue)
            try:
                sub.info = await self._api.subscription(sub.path)
            except api_exceptions.NotFound:
                raise ConfigError(f"subscription {sub.path} does not exist", field=where) from None
        try:
            await self._api.check_topic(self.settings.result_topic)
        except api_exceptions.NotFound:
            raise ConfigError(
                f"topic {self.settings.result_topic} does not exist", field="result_topic_id"
            ) from None

    def _sub(self, queue: str) -> _Subscription:
        sub = self._subs.get(queue)
        if sub is None:
            path = subscription_path(self.settings.project, queue)
            sub = self._subs[queue] = _Subscription(queue, path)
            self._tasks.append(asyncio.create_task(self._pull_loop(sub), name=f"pull-{queue}"))
        return sub

    async def _pull_loop(self, sub: _Subscription) -> None:
        while not self._closed:
            await sub.wanted.wait()
            room = self.settings.max_unclaimed - len(sub.unclaimed)
            if room <= 0:
                sub.wanted.clear()
                continue
            wait = _PULL_WAIT if sub.first_pull.is_set() else _FIRST_PULL_WAIT
            got = await self._pull(sub, room, wait)
            if got:
                await self._hold(sub, got)
            sub.first_pull.set()
            if got is None:
                await asyncio.sleep(_PULL_ERROR_PAUSE)

    async def _pull(self, sub: _Subscription, room: int, wait: float) -> list[Received] | None:
        """One pull; None when it failed (recorded in the subscription's health)."""
        try:
            got = await self._api.pull(sub.path, room, wait=wait)
        except api_exceptions.DeadlineExceeded:
            got = []  # a long poll that found nothing
        except Exception as exc:
            sub.health.failed(time.monotonic(), f"{type(exc).__name__}: {exc}")
            log.warning("pulling %s failed: %s", sub.path, exc)
            return None
        sub.health.succeeded(time.monotonic())
        return got

    async def _hold(self, sub: _Subscription, got: list[Received]) -> None:
        hold = self.settings.hold_seconds
        try:
            await asyncio.gather(*(self._deadlines.submit((sub.path, hold), m.ack_id) for m in got))
        except Exception as exc:  # their current deadline still applies; offer them anyway
            log.warning("setting the hold of %d messages failed: %s", len(got), exc)
        until = time.monotonic() + hold - _HOLD_MARGIN
        for message in got:
            retries = retry_count_of(message, self._retries.get(message.message_id, 0))
            member = message_member(message, queue=sub.queue, retry_count=retries)
            sub.unclaimed[member] = _Message(message, member, message_score(member), until)
        sub.unseen += len(got)
        sub.wanted.clear()
        sub.fire_arrived()

    def _drop_lapsed(self, sub: _Subscription) -> None:
        now = time.monotonic()
        for member in [m for m, msg in sub.unclaimed.items() if msg.hold_until <= now]:
            del sub.unclaimed[member]

    # -- consumer side ----------------------------------------------------------------------

    async def peek(self, queue: str, limit: int, *, offset: int = 0) -> list[Entry]:
        """Held messages by deadline; asks the puller for more when fewer are held. The first
        peek of a subscription waits for its first pull, so a processor's first ingest pass
        sees what was already published (lane order from the first dispatch)."""
        sub = self._sub(queue)
        if not sub.first_pull.is_set():
            sub.wanted.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(sub.first_pull.wait(), _FIRST_PULL_WAIT + 1.0)
        self._drop_lapsed(sub)
        held = sorted(sub.unclaimed.values(), key=lambda m: (m.score, m.member))
        if len(held) < offset + limit:
            sub.wanted.set()
        sub.unseen = 0
        return [Entry(queue, m.member, m.score) for m in held[offset : offset + limit]]

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

    def _take(self, entry: Entry, key: str, owner: str, lease_until: float) -> Claim | None:
        """Move a held message to claimed (locally); None when it is gone or lapsed."""
        sub = self._sub(entry.queue)
        message = sub.unclaimed.get(entry.member)
        if message is None or key in sub.claimed or message.hold_until <= time.monotonic():
            return None
        del sub.unclaimed[entry.member]
        claim = Claim(entry.queue, key, entry.member, entry.score, owner, lease_until)
        sub.claimed[key] = (claim, message)
        return claim

    async def _claim_all(self, asks: Sequence[tuple[Entry, str, str, float]]) -> list[Claim | None]:
        """Take each message and set its ack deadline to the lease; a message whose deadline
        change fails (with exactly-once delivery: no longer ours) is not claimed."""
        claims = [self._take(*ask) for ask in asks]
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

    def _owned(self, claim: Claim) -> tuple[_Subscription, _Message] | None:
        sub = self._subs.get(claim.queue)
        held = None if sub is None else sub.claimed.get(claim.key)
        if sub is None or held is None or held[0].owner != claim.owner:
            return None
        return sub, held[1]

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

    async def _fence(self, sub: _Subscription, message: _Message) -> bool:
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

    async def quarantine(self, entry: Entry) -> bool:
        """Acknowledge an unreadable message so it is never delivered again; log its id."""
        sub = self._sub(entry.queue)
        message = sub.unclaimed.pop(entry.member, None)
        if message is None:
            return False
        log.warning(
            "acknowledged unreadable message %s of %s", message.received.message_id, sub.path
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
        waits = [asyncio.ensure_future(sub.arrived.wait()) for sub in subs]
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
        raise BrokerError("results go to a Pub/Sub topic: read them with a subscription")

    async def result_count(self, destination: str) -> int:
        raise BrokerError("results go to a Pub/Sub topic: read them with a subscription")

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

    async def _extend(self, sub: _Subscription) -> None:
        lease = self.settings.lease_seconds
        ids = [message.received.ack_id for _, message in sub.claimed.values()]
        now = time.monotonic()
        for ack_id, due in list(sub.deferred.items()):
            remaining = due - now
            if remaining <= MAX_ACK_DEADLINE:
                del sub.deferred[ack_id]
                await self._deadlines.submit((sub.path, math.ceil(max(0.0, remaining))), ack_id)
            else:
                ids.append(ack_id)
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

    async def _probe(self, sub: _Subscription) -> None:
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


def pubsub_settings(options: BrokerOptions) -> PubSubSettings:
    """Settings from the transport config keys (``project_id``, ``result_topic_id``,
    ``batch_size``, ``claim_lease_ttl_seconds``) at the process time scale."""
    raw = options.settings
    project = str(raw.get("project_id") or "")
    if not project:
        raise ConfigError("gcp-pubsub needs project_id", field="project_id")
    scale = options.time_scale
    lease = float(raw.get("claim_lease_ttl_seconds", 60.0))  # type: ignore[arg-type]
    return PubSubSettings(
        project=project,
        result_topic=topic_path(project, str(raw.get("result_topic_id") or "")),
        lease_seconds=int(min(MAX_ACK_DEADLINE, max(3.0, math.ceil(lease / scale)))),
        hold_seconds=int(max(3, math.ceil(10.0 / scale))),
        max_unclaimed=int(raw.get("batch_size", 10)),  # type: ignore[call-overload]
    )


def _topic_entries(raw: Mapping[str, object]) -> list[tuple[str, str]]:
    topics = raw.get("topics")
    if not isinstance(topics, list):
        return []
    return [
        (str(t.get("subscriber_id", "")), f"topics[{i}].subscriber_id")
        for i, t in enumerate(topics)
        if isinstance(t, Mapping)
    ]


async def open_pubsub_broker(options: BrokerOptions, api: PubSubApi | None = None) -> PubSubBroker:
    """Open the broker and check that every subscription and the result topic exist."""
    settings = pubsub_settings(options)
    clock = options.clock or RealClock(options.time_scale)
    broker = PubSubBroker(api or GrpcPubSub(), settings, clock=clock)
    try:
        await broker.check(_topic_entries(options.settings))
    except BaseException:
        await broker.aclose()
        raise
    return broker
