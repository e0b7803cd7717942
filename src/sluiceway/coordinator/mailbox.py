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
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sluiceway.broker.base import CANCEL_MARKER_TTL_SECONDS, Broker
from sluiceway.broker.keys import mailbox
from sluiceway.broker.wakeup import WakeMode
from sluiceway.clock import Clock
from sluiceway.coordinator.answers import is_cancelled_tombstone
from sluiceway.processor.producer import Producer, request

__all__ = ["Lookup", "MailboxState", "Mailboxes", "WakePlan", "envelope_id", "mailbox_key"]

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

    def __init__(self, broker: Broker, *, clock: Clock, wake: WakePlan, fetch_grace: float) -> None:
        self._broker = broker
        self._clock = clock
        self._wake = wake
        self._grace = fetch_grace
        self._producer = Producer(broker, clock=clock)

    async def lookup(self, tenant: str, request_id: str) -> Lookup:
        box = mailbox_key(tenant, request_id)
        record = await self._broker.peek_result(box)
        if record is None and await self._broker.is_pending(envelope_id(tenant, request_id)):
            return Lookup(MailboxState.PENDING)
        if record is None:  # answered between the two looks
            record = await self._broker.peek_result(box)
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
                await self._broker.expire_result(mailbox_key(req.tenant, req.request_id), 0)
            elif found.state is MailboxState.PENDING:
                await self._broker.revive(envelope_id(req.tenant, req.request_id))
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
        while not look or (record := await self._broker.peek_result(box)) is None:
            left = until - self._clock.now()
            if left <= 0:
                return None
            block = min(self._clock.to_wall(left), self._wake.interval)
            if self._wake.notify:
                # wait_for_result looks once itself before waiting: after a quiet backstop
                # interval the next round's wait is the only query (one per interval).
                look = await self._broker.wait_for_result(box, block)
            else:
                await asyncio.sleep(block)
        return record

    async def delivered(self, tenant: str, request_id: str) -> None:
        """A result was handed out: keep it only for the fetch grace."""
        grace = self._clock.to_wall(self._grace) if self._grace > 0 else 0.0
        await self._broker.expire_result(mailbox_key(tenant, request_id), grace)

    async def cancel(self, tenant: str, request_id: str) -> bool:
        """Cancel before dispatch (best effort; a running request is aborted by the processor)."""
        ttl = self._clock.to_wall(CANCEL_MARKER_TTL_SECONDS)
        return await self._broker.cancel(envelope_id(tenant, request_id), expire_after=ttl)

    async def delete(self, tenant: str, request_id: str) -> None:
        await self.cancel(tenant, request_id)
        await self._broker.expire_result(mailbox_key(tenant, request_id), 0)


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
