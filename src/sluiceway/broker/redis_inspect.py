"""Redis reads behind :class:`~sluiceway.broker.inspect.Inspectable` (``status``, ``results``).

Plain reads in one pipeline per call; nothing here writes. Retry counts read the retry set
(at most :data:`RETRY_SCAN_LIMIT` members) and count members by origin queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sluiceway.broker.inspect import QueueCounts, count_retries
from sluiceway.broker.keys import QueueKeys

__all__ = ["RETRY_SCAN_LIMIT", "peek_results", "queue_counts"]

RETRY_SCAN_LIMIT = 100_000


async def queue_counts(client: Any, queues: Sequence[QueueKeys]) -> list[QueueCounts]:
    """Counts of each queue: ZCARD, HLEN claimed, LLEN invalid, the head score, retries."""
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.zcard(q.pending)
        pipe.hlen(q.claimed)
        pipe.llen(q.invalid)
        pipe.zrange(q.pending, 0, 0, withscores=True)
    retry_sets = sorted({q.retry for q in queues})
    for retry in retry_sets:
        pipe.zrange(retry, 0, RETRY_SCAN_LIMIT - 1)
    replies = await pipe.execute()
    members = [m for reply in replies[4 * len(queues) :] for m in reply]
    retries = count_retries(members)
    out = []
    for index, q in enumerate(queues):
        pending, claimed, invalid, head = replies[4 * index : 4 * index + 4]
        out.append(
            QueueCounts(
                queue=q.pending,
                pending=int(pending),
                claimed=int(claimed),
                retrying=retries[q.pending],
                invalid=int(invalid),
                oldest_deadline=float(head[0][1]) if head else None,
            )
        )
    return out


async def peek_results(client: Any, destination: str, limit: int) -> list[str]:
    """The ``limit`` oldest records (LPUSH puts the newest at the head), oldest first."""
    if limit <= 0:
        return []
    records = await client.lrange(destination, -limit, -1)
    return [str(r) for r in reversed(records)]
