"""The order one queue's ingest reads in: what each pass saw of the queue's head, fed to the
overload policy (:mod:`~sluiceway.processor.overload_order`), and the gauge that tells the order.

The oldest pending request is at the head in deadline order. A pass that read from offset 0 in
deadline order has seen it already; otherwise (reading newest first, or no room for a read) one
page of the head is peeked, at most once per poll interval. A request's sojourn runs from its
``created`` (the producer's stamp, Unix seconds on the clock deadlines use); one without it, or
with one in the future (another host's clock), counts from when this process first saw it at
the head, which can only under-estimate.

While a queue is read newest first nothing else reaches its head, so the entries there that are
past their deadline are answered here (DEADLINE_EXCEEDED, as a pass in deadline order would):
the dead do not pile up in the broker, and the oldest sojourn is a live request's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

from sluiceway.broker.base import Entry
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, LATEST_DEADLINE, PeekOrder
from sluiceway.processor.entry_decision import EntryDecision
from sluiceway.processor.metrics import QueueLabels
from sluiceway.processor.overload_order import OverloadOrder
from sluiceway.processor.runtime import Runtime
from sluiceway.wire import EntryError, decode_envelope

__all__ = ["QueueOrder"]

log = logging.getLogger(__name__)

# Ingest's decision for one entry (``QueueIngest.consider``): here it answers an expired one.
Consider = Callable[[Entry, int], Awaitable[EntryDecision]]


class QueueOrder:
    """The peek order of one queue's ingest, and what feeds it."""

    def __init__(self, rt: Runtime, queue: str, labels: QueueLabels, consider: Consider) -> None:
        settings = rt.settings
        # A broker that reads in its own order (Pub/Sub) is left in deadline order: no probes.
        fixed = getattr(rt.broker, "fixed_peek_order", False)
        target = 0.0 if fixed else settings.overload_sojourn_target
        self.policy = OverloadOrder(target, settings.overload_interval)
        self._rt = rt
        self._queue = queue
        self._labels = labels
        self._consider = consider
        self._head: list[Entry] | None = None  # the head page this pass read, if it did
        self._first_seen: dict[str, float] = {}  # head members -> when first seen there
        self._probed_at = -math.inf

    @property
    def order(self) -> PeekOrder:
        return self.policy.order

    async def peek(self, limit: int, offset: int) -> list[Entry]:
        """One page of the queue in the current order (the head page is kept for the policy)."""
        order = self.policy.order
        entries = await self._rt.broker.peek(self._queue, limit, offset=offset, order=order)
        if offset == 0 and order is EARLIEST_DEADLINE:
            self._head = entries
        return entries

    async def after_pass(self) -> None:
        """Feed the policy the oldest sojourn this pass saw (peeking the head if it saw none)."""
        head, self._head = self._head, None
        if not self.policy.enabled:
            return
        now = self._rt.clock.now()
        if head is None:
            if now - self._probed_at < self._rt.settings.poll_interval:
                return
            self._probed_at = now
            head = await self._probe(now)
        live = [e for e in head if e.score > now]
        before = self.policy.order
        order = self.policy.observe(now, self._oldest_sojourn(live, now), len(head))
        if order is not before:
            self._switched(order, now)

    def _oldest_sojourn(self, live: list[Entry], now: float) -> float | None:
        self._first_seen = {e.member: self._first_seen.get(e.member, now) for e in live}
        if not live:
            return None
        oldest = live[0]
        try:
            created = decode_envelope(oldest.member).data.created
        except EntryError:  # ingest moves it aside; its wait is still a wait
            created = None
        if created is None or created > now:
            return now - self._first_seen[oldest.member]
        return now - float(created)

    async def _probe(self, now: float) -> list[Entry]:
        """The head page; read newest first, its expired entries are answered first."""
        limit = self._rt.settings.batch_size
        page = await self._rt.broker.peek(self._queue, limit)
        while self.policy.order is LATEST_DEADLINE and page and page[0].score <= now:
            for entry in (e for e in page if e.score <= now):
                decision = await self._consider(entry, 0)
                if decision.candidate is not None:  # its score said expired, its envelope not
                    await decision.candidate.holdings.release_all()
            previous, page = page, await self._rt.broker.peek(self._queue, limit)
            if page[:1] == previous[:1]:  # nothing moved (claimed elsewhere): leave it
                break
        return page

    def _switched(self, order: PeekOrder, now: float) -> None:
        self._rt.metrics.order_used(self._labels, order)
        if order is LATEST_DEADLINE:
            log.warning(
                "queue %s: reading newest first: its oldest request has waited over %.3gs "
                "for %.3gs (overload)",
                self._queue,
                self.policy.target,
                self.policy.above_for(now),
            )
        else:
            log.info("queue %s: reading by deadline again", self._queue)
