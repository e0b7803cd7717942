"""Queued requests and their results, through the ``Broker`` protocol only.

Each queued request is the envelope ``<tenant>:<request-id>`` in its route's queue with its own
result list, the mailbox ``results:req:<tenant>:<request-id>``. A result is looked up without
being consumed, kept until first delivered, then for ``fetch_grace_seconds`` (0: deleted on
delivery). Held connections wait on the broker's wake-ups (keyspace events on Redis, in-process
notification on the memory broker) with a slow backstop, so an idle held connection costs no
query per poll; where the broker cannot notify, they look every ``POLL_SECONDS``.

Re-attach (a retried client sending the same ``x-request-id``): a stored result is served; a
stored CANCELLED tombstone is deleted and the request queued afresh; a pending request has its
cancellation withdrawn (if a disconnect had cancelled it) and is held again; an unknown one is
queued. So a retry never queues a request twice.

A broker blip (a Redis restart, a failover) must not fail a held connection: every broker call
but the submission is retried on :class:`BrokerError` (``BlipPolicy``: 5 tries, 0.1 s backoff
doubling to at most 1 s, about 1.5 s in all) before the error reaches the caller, which answers
503 with ``Retry-After``. A submission is not retried here (it may have landed): the client's
retry with the same ``x-request-id`` re-attaches instead. Delivery never fails because the
mailbox's expiry could not be shortened: the result expires on its own later. On Redis each
command is also sent once more on a fresh connection after a connection error (the pooled
ones a restart left stale), and the outage is logged once lost and once back.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, TypeVar

from sluiceway.broker.base import CANCEL_MARKER_TTL_SECONDS, Broker
from sluiceway.broker.keys import mailbox
from sluiceway.broker.wakeup import WakeMode
from sluiceway.clock import Clock
from sluiceway.coordinator.answers import is_cancelled_tombstone
from sluiceway.errors import BrokerError
from sluiceway.observability.logging import is_connection_error, outage_log
from sluiceway.processor.producer import Producer, request

__all__ = [
    "BlipPolicy",
    "Lookup",
    "MailboxState",
    "Mailboxes",
    "WakePlan",
    "envelope_id",
    "mailbox_key",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

POLL_SECONDS: Final = 0.2  # wall seconds between looks when the broker cannot notify
BACKSTOP_SECONDS: Final = 15.0  # wall seconds between looks while notifications flow


def envelope_id(tenant: str, request_id: str) -> str:
    """The queued envelope's id: ``<tenant>:<request id>``, so two tenants that pick the same
    id never share a queue entry, a result or a mailbox. Callers see only their own id."""
    return f"{tenant}:{request_id}"


def mailbox_key(tenant: str, request_id: str) -> str:
    return mailbox(tenant, request_id)


class MailboxState(enum.Enum):
    READY = "ready"
    PENDING = "pending"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Lookup:
    """A request's state, with its stored result when READY."""

    state: MailboxState
    record: str | None = None


@dataclass(frozen=True, slots=True)
class WakePlan:
    """How held connections learn of results: broker notifications or polling."""

    notify: bool

    @property
    def interval(self) -> float:
        return BACKSTOP_SECONDS if self.notify else POLL_SECONDS


@dataclass(frozen=True, slots=True)
class BlipPolicy:
    """How often a failed broker call is tried again, and how long apart (wall seconds)."""

    attempts: int = 5
    first_backoff: float = 0.1
    max_backoff: float = 1.0

    def backoffs(self) -> list[float]:
        """The pauses between tries: ``attempts - 1`` of them, doubling up to the maximum."""
        return [min(self.first_backoff * 2**n, self.max_backoff) for n in range(self.attempts - 1)]


@dataclass(frozen=True, slots=True)
class QueuedRequest:
    """What the coordinator queues for one wait or enqueue request."""

    tenant: str
    request_id: str
    queue: str
    payload: Mapping[str, Any]
    deadline: float  # scaled Unix seconds
    endpoint: str
    metadata: Mapping[str, str]
    headers: Mapping[str, str]


class Mailboxes:
    """Submits queued requests and reads, waits for and retires their results."""

    def __init__(
        self,
        broker: Broker,
        *,
        clock: Clock,
        wake: WakePlan,
        fetch_grace: float,
        blips: BlipPolicy | None = None,
    ) -> None:
        self._broker = broker
        self._clock = clock
        self._wake = wake
        self._grace = fetch_grace
        self._blips = blips or BlipPolicy()
        self._producer = Producer(broker, clock=clock)

    async def _retried(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()``, tried again after a BrokerError as the blip policy says. A lost broker
        is told once, and once when it is back with the count of calls that failed meanwhile
        (the broker's :class:`~sluiceway.observability.logging.OutageLog`)."""
        outage = outage_log(self._broker, "broker", log)
        for pause in (*self._blips.backoffs(), None):
            try:
                answer = await call()
            except BrokerError as exc:
                if is_connection_error(exc):
                    outage.failed(exc, "held requests")
                if pause is None:
                    raise
                if not is_connection_error(exc):
                    log.debug("broker call failed, again in %.2f s: %s", pause, exc)
                await asyncio.sleep(pause)
                continue
            outage.succeeded()
            return answer
        raise AssertionError("unreachable")

    async def _peek(self, box: str) -> str | None:
        return await self._retried(lambda: self._broker.peek_result(box))

    async def lookup(self, tenant: str, request_id: str) -> Lookup:
        box = mailbox_key(tenant, request_id)
        envelope = envelope_id(tenant, request_id)
        record = await self._peek(box)
        if record is None and await self._retried(lambda: self._broker.is_pending(envelope)):
            return Lookup(MailboxState.PENDING)
        if record is None:  # answered between the two looks
            record = await self._peek(box)
        return (
            Lookup(MailboxState.UNKNOWN) if record is None else Lookup(MailboxState.READY, record)
        )

    async def attach_or_submit(self, req: QueuedRequest, *, reattach: bool) -> Lookup:
        """Queue ``req``, or re-attach to the request of the same id (see the module doc)."""
        if reattach:
            found = await self.lookup(req.tenant, req.request_id)
            if found.state is MailboxState.READY and found.record is not None:
                if not is_cancelled_tombstone(found.record):
                    return found
                await self._expire(mailbox_key(req.tenant, req.request_id), 0)
            elif found.state is MailboxState.PENDING:
                envelope = envelope_id(req.tenant, req.request_id)
                await self._retried(lambda: self._broker.revive(envelope))
                return found
        await self._submit(req)
        return Lookup(MailboxState.PENDING)

    async def _submit(self, req: QueuedRequest) -> None:
        data = request(
            envelope_id(req.tenant, req.request_id),
            dict(req.payload),
            deadline=req.deadline,
            metadata=req.metadata,
            headers=req.headers,
            endpoint=req.endpoint,
            created=self._clock.now(),
        )
        await self._producer.submit(
            data, queue=req.queue, result_queue=mailbox_key(req.tenant, req.request_id)
        )

    async def wait_for_result(self, tenant: str, request_id: str, *, until: float) -> str | None:
        """The request's result once it lands, or None at ``until`` (scaled Unix seconds)."""
        box = mailbox_key(tenant, request_id)
        look = True
        while not look or (record := await self._peek(box)) is None:
            left = until - self._clock.now()
            if left <= 0:
                return None
            block = min(self._clock.to_wall(left), self._wake.interval)
            if self._wake.notify:
                # wait_for_result looks once itself before waiting: after a quiet backstop
                # interval the next round's wait is the only query (one per interval).
                look = await self._retried(partial(self._broker.wait_for_result, box, block))
            else:
                await asyncio.sleep(block)
        return record

    async def _expire(self, box: str, after: float) -> None:
        await self._retried(lambda: self._broker.expire_result(box, after))

    async def delivered(self, tenant: str, request_id: str) -> None:
        """A result was handed out: keep it only for the fetch grace (a broker that cannot be
        told leaves it to expire on its own: the answer is delivered all the same)."""
        grace = self._clock.to_wall(self._grace) if self._grace > 0 else 0.0
        try:
            await self._expire(mailbox_key(tenant, request_id), grace)
        except BrokerError as exc:
            log.warning("result of %s delivered; its expiry not shortened: %s", request_id, exc)

    async def cancel(self, tenant: str, request_id: str) -> bool:
        """Cancel before dispatch (best effort; a running request is aborted by the processor)."""
        ttl = self._clock.to_wall(CANCEL_MARKER_TTL_SECONDS)
        envelope = envelope_id(tenant, request_id)
        return await self._retried(lambda: self._broker.cancel(envelope, expire_after=ttl))

    async def delete(self, tenant: str, request_id: str) -> bool:
        """Cancel the request and delete its result; False (nothing done) for an id this
        tenant does not have: another tenant's ids are unknown ids here."""
        if (await self.lookup(tenant, request_id)).state is MailboxState.UNKNOWN:
            return False
        await self.cancel(tenant, request_id)
        await self._expire(mailbox_key(tenant, request_id), 0)
        return True


def wake_plan(broker: Broker, wakeup_mode: str) -> WakePlan:
    """``auto``: notifications when the broker has them; ``notify`` requires them; ``poll``."""
    from sluiceway.errors import ConfigError

    can_notify = getattr(broker, "result_wake_mode", WakeMode.POLLING) is WakeMode.EVENTS
    if wakeup_mode == "notify" and not can_notify:
        raise ConfigError(
            "wakeup_mode notify needs a broker that publishes list events (Redis: "
            "notify-keyspace-events with K and l or A)",
            field="wakeup_mode",
        )
    return WakePlan(notify=can_notify and wakeup_mode != "poll")
