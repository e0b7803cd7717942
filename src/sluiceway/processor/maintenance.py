"""Background tasks of a processor: claim heartbeat, reclaimer, retry mover, backlog poller.

Each is a loop of one named step; the loops are timers only where nothing can signal (leases,
backlog gauges). The retry mover sleeps until the earliest due retry or until this process
parks a new one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from sluiceway.broker.base import Claim, RenewOutcome
from sluiceway.processor.metrics import PROXIMITY_BUCKETS, QueueLabels
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.work_item import WorkItem

__all__ = [
    "RECLAIM_BATCH",
    "RenewsInBatches",
    "heartbeat_interval",
    "heartbeat_once",
    "move_retries_once",
    "poll_backlog_once",
    "reclaim_once",
    "run_every",
    "run_retry_mover",
    "start_maintenance",
    "stop_tasks",
]

log = logging.getLogger(__name__)
_MOVE_LIMIT = 1000  # due retries moved per broker call
# Expired claims returned per queue per reclaimer round: bounds one round's broker call; the
# rest wait for the next round (``reclaim_interval``).
RECLAIM_BATCH = 100


def heartbeat_interval(lease: float) -> float:
    """A third of the lease, within [1, 30] scaled seconds (upstream's rule)."""
    return min(30.0, max(1.0, lease / 3))


async def run_every(
    rt: Runtime,
    interval: float,
    step: Callable[[], Awaitable[object]],
    *,
    at_once: bool = False,
) -> None:
    """Run ``step`` every ``interval`` scaled seconds until the processor stops (``at_once``:
    the first run right away, as for gauges that should not read 0 until the first tick)."""
    if at_once:
        await _run_step(step)
    while True:
        await rt.clock.sleep(interval)
        await _run_step(step)


async def _run_step(step: Callable[[], Awaitable[object]]) -> None:
    try:
        await step()
    except Exception:
        log.exception("background step %s failed", getattr(step, "__name__", step))
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        # A cancel that landed inside the step was swallowed on the way (redis-py can absorb
        # one during a read): honour it here, or stopping would wait for this task forever.
        raise asyncio.CancelledError


@runtime_checkable
class RenewsInBatches(Protocol):
    """A broker that renews many claims in one round trip (the Redis broker)."""

    async def renew_many(self, renewals: Sequence[tuple[Claim, float]]) -> list[RenewOutcome]:
        """One outcome per ``(claim, lease_until)`` pair, in order."""
        ...


async def heartbeat_once(rt: Runtime) -> int:
    """Renew every claim and gate holding this process holds; returns how many were lost.

    One lease instant per round (leases then group well), renewed in one batch where the
    broker can, else claim by claim."""
    items = list(rt.book)
    if not items:
        return 0
    now = rt.clock.now()
    leases = [rt.lease_until(item.deadline, now=now) for item in items]
    try:
        outcomes = await _renew_all(rt, items, leases)
    except Exception:  # keep going: the next round retries, leases have slack
        log.warning("renewing %d claims failed", len(items), exc_info=True)
        return 0
    lost = 0
    for item, lease_until, outcome in zip(items, leases, outcomes, strict=True):
        if outcome is None:
            continue
        lost += await _after_renewal(item, lease_until, outcome)
    return lost


async def _renew_all(
    rt: Runtime, items: list[WorkItem], leases: list[float]
) -> list[RenewOutcome | None]:
    broker = rt.broker
    if isinstance(broker, RenewsInBatches):
        pairs = [(item.claim, lease) for item, lease in zip(items, leases, strict=True)]
        return list(await broker.renew_many(pairs))
    out: list[RenewOutcome | None] = []
    for item, lease_until in zip(items, leases, strict=True):
        try:
            out.append(await broker.renew(item.claim, lease_until=lease_until))
        except Exception:  # keep renewing the others; this one retries next round
            log.warning("renewing the claim of %s failed", item.request_id, exc_info=True)
            out.append(None)
    return out


async def _after_renewal(item: WorkItem, lease_until: float, outcome: RenewOutcome) -> int:
    """Apply one renewal's outcome; 1 when the claim is lost."""
    if outcome is RenewOutcome.RENEWED:
        item.claim = _with_lease(item.claim, lease_until)
        await item.holdings.renew_all(lease_until)
        return 0
    if outcome is RenewOutcome.STOLEN:
        log.warning("claim of %s was taken over after its lease lapsed", item.request_id)
    else:  # finished meanwhile, or reclaimed and answered elsewhere
        log.debug("claim of %s is gone", item.request_id)
    return 1


def _with_lease(claim: Claim, lease_until: float) -> Claim:
    return dataclasses.replace(claim, lease_until=lease_until)


async def reclaim_once(rt: Runtime, queues: Sequence[str]) -> int:
    """Return expired claims (of any crashed owner) to their queues."""
    total = 0
    for queue in queues:
        total += await rt.broker.reclaim_expired(queue, rt.clock.now(), RECLAIM_BATCH)
    if total:
        rt.wake.entries_returned()
    return total


async def move_retries_once(rt: Runtime, fallback_queue: str) -> int:
    """Move due retries back to their queues."""
    moved = await rt.broker.move_due_retries(
        rt.clock.now(), _MOVE_LIMIT, fallback_queue=fallback_queue
    )
    if moved:
        rt.wake.entries_returned()
    return moved


async def run_retry_mover(rt: Runtime, fallback_queue: str) -> None:
    """Move retries as they fall due; sleep until the next due time or a new retry.

    Ends once the processor is stopping even if a cancellation was swallowed inside the
    broker client (redis-py can lose one that lands mid-command), instead of hanging the stop.
    """
    while not rt.stopping:
        try:
            while await move_retries_once(rt, fallback_queue) >= _MOVE_LIMIT:
                pass
            due = await rt.broker.next_retry_due()
        except Exception:
            log.exception("retry mover failed")
            due = None
        wait = rt.settings.poll_interval
        if due is not None:
            wait = min(wait, max(0.0, due - rt.clock.now()))
        await rt.wake.retries.wait(rt.wall(wait) + 0.001)


async def poll_backlog_once(rt: Runtime, queues: Sequence[QueueLabels]) -> None:
    """Set ``broker_backlog`` and ``deadline_proximity_millis`` for each queue."""
    for labels in queues:
        try:
            depth = await rt.broker.backlog(labels.queue_name)
            now = rt.clock.now()
            counts = await rt.broker.count_due(
                labels.queue_name, [now + b for b in PROXIMITY_BUCKETS]
            )
        except Exception:
            rt.metrics.backlog_unavailable(labels)
            continue
        rt.metrics.backlog_read(labels, depth, counts)


def start_maintenance(
    rt: Runtime, labels: Callable[[], list[QueueLabels]]
) -> list[asyncio.Task[None]]:
    """The background tasks of a started processor; ``labels``: its queues' at each round (a
    hot reload may add or remove queues), as are the queue names."""
    settings = rt.settings
    fallback = settings.queues[0].queue_name if settings.queues else "request-sortedset"

    def names() -> list[str]:
        return [q.queue_name for q in rt.settings.queues]

    tasks = [
        asyncio.create_task(run_retry_mover(rt, fallback), name="retry-mover"),
        asyncio.create_task(
            rt.cancels.run(rt.broker, rt.clock, settings.cancel_check_interval),
            name="cancel-watch",
        ),
        asyncio.create_task(
            run_every(rt, heartbeat_interval(settings.claim_lease), lambda: heartbeat_once(rt)),
            name="heartbeat",
        ),
        asyncio.create_task(
            run_every(rt, settings.reclaim_interval, lambda: reclaim_once(rt, names())),
            name="reclaimer",
        ),
    ]
    if settings.backlog_interval > 0:
        backlog = run_every(
            rt, settings.backlog_interval, lambda: poll_backlog_once(rt, labels()), at_once=True
        )
        tasks.append(asyncio.create_task(backlog, name="backlog"))
    return tasks


async def stop_tasks(tasks: Sequence[asyncio.Task[None]]) -> None:
    """Cancel background tasks and wait for them to end."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
