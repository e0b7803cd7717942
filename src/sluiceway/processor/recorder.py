"""The recorder, last step of a request's path: every claimed request ends in exactly one of
ack-with-result (the broker's fenced ack), retry or release; then its gate holdings are
released and ingest is told there may be room. Results are built in
:mod:`~sluiceway.processor.results`."""

from __future__ import annotations

import logging

from sluiceway.broker.base import Claim, ResultWrite
from sluiceway.broker.keys import (
    DEFAULT_RETRY_QUEUE,
    MAILBOX_DEFAULT_TTL_SECONDS,
    MAILBOX_PREFIX,
    Keyspace,
)
from sluiceway.processor.poison import reserved_keys, route_problem
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.specs import QueueSpec
from sluiceway.processor.work_item import WorkItem
from sluiceway.wire import ResultRecord, encode_envelope

__all__ = ["Recorder", "reserved_routes", "result_route", "result_ttl"]

log = logging.getLogger(__name__)


def result_route(own_route: str | None, queue: QueueSpec, default: str) -> str:
    """Where a result goes: the entry's own route, else the queue's, else the default (a
    caller that names a route always gets its result there)."""
    return own_route or queue.result_queue_name or default


def result_ttl(destination: str, queue: QueueSpec) -> float | None:
    """The queue's ``result_ttl_seconds``; unset, an hour for a coordinator mailbox (a result
    nobody fetches must not live forever) and no expiry for other lists (upstream's rule)."""
    if queue.result_ttl_seconds is None and destination.startswith(MAILBOX_PREFIX):
        return MAILBOX_DEFAULT_TTL_SECONDS
    return queue.result_ttl_seconds


def reserved_routes(rt: Runtime) -> frozenset[str]:
    """The keys this processor reads from, which no result may be pushed to (issue 26)."""
    keyspace = getattr(rt.broker, "keyspace", None)
    retry = keyspace.retry_queue_name if isinstance(keyspace, Keyspace) else DEFAULT_RETRY_QUEUE
    return reserved_keys(tuple(q.queue_name for q in rt.settings.queues), retry)


class Recorder:
    """Writes outcomes for work items (and for entries settled at ingest).

    Whatever the broker answers, the item leaves this process's books and its gate holdings
    are released; if the broker call failed, the claim's lease runs out (no heartbeat renews
    it any more) and the reclaimer returns the request to its queue.
    """

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    def _write(self, record: ResultRecord, route: str | None, queue: QueueSpec) -> ResultWrite:
        if route_problem(route, reserved_routes(self._rt)) is not None:
            route = None  # never into a key this processor reads: the queue's route instead
        destination = result_route(route, queue, self._rt.settings.result_queue_name)
        ttl = result_ttl(destination, queue)
        return ResultWrite(
            destination=destination,
            record=record.encode(),
            request_id=record.id,
            request_token=record.request_token,
            expire_after=None if ttl is None else self._rt.wall(ttl),
        )

    async def settle(
        self, claim: Claim, record: ResultRecord, route: str | None, queue: QueueSpec
    ) -> bool:
        """Ack a claim taken only to answer it (invalid, expired, cancelled, dropped)."""
        return await self._rt.broker.ack(claim, self._write(record, route, queue))

    async def result(self, item: WorkItem, record: ResultRecord, counter: str | None) -> bool:
        """Ack ``item`` with ``record``; False when a newer owner holds the claim (fenced)."""
        write = self._write(record, item.envelope.result_route, item.queue)
        try:
            acked = await self._rt.broker.ack(item.claim, write)
        finally:
            await self._done(item)
        if not acked:
            log.warning("result for %s fenced: the claim was taken over", item.request_id)
        elif counter is not None:
            self._rt.metrics.outcome(item.labels, counter)
        self._rt.memory.forget(item.request_id, item.token)
        return acked

    async def retry(self, item: WorkItem, delay: float, *, count: bool = True) -> bool:
        """Park ``item`` in the retry set for ``delay`` scaled seconds."""
        envelope = item.envelope.with_internal(
            retry_count=item.envelope.internal.retry_count + (1 if count else 0),
            request_queue_name=item.queue.queue_name,
        )
        due = self._rt.clock.now() + delay
        try:
            parked = await self._rt.broker.retry_after(
                item.claim, member=encode_envelope(envelope), due=due
            )
        finally:
            await self._done(item)
        if parked and count:
            self._rt.metrics.retried(item.labels)
        self._rt.wake.retry_parked()
        return parked

    async def release(self, item: WorkItem) -> bool:
        """Give ``item`` back to its queue at its original score (drain, gate-wait timeout)."""
        try:
            return await self._rt.broker.release(item.claim)
        finally:
            await self._done(item)

    async def _done(self, item: WorkItem) -> None:
        self._rt.book.remove(item)
        if item.holdings:  # most requests pass no gate that holds anything
            await item.holdings.release_all()
        self._rt.wake.claim_released(gated=bool(item.queue.gate_type))
