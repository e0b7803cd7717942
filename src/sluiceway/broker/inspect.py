"""Read-only views of a broker for operators: queue counts and result lists.

``sluiceway status`` and ``sluiceway results`` use these; the processor never does. Every
backend (memory, SQLite, Redis) implements :class:`Inspectable` as extra methods; none of them
changes what it looks at, except :meth:`Inspectable.remove_result`, which ``results --consume
--id`` uses to take exactly one record.

This module imports only the standard library.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from sluiceway.broker.base import retry_origin

__all__ = ["Inspectable", "QueueCounts", "count_retries"]


@dataclass(frozen=True, slots=True)
class QueueCounts:
    """One queue's state: entries pending, claimed (in flight), parked for retry, quarantined
    in ``<queue>:invalid``, and the earliest pending deadline (scaled Unix seconds, or None)."""

    queue: str
    pending: int
    claimed: int
    retrying: int
    invalid: int
    oldest_deadline: float | None


def count_retries(members: Iterable[str]) -> Counter[str]:
    """Retry-set members per origin queue (members that do not name one are left out)."""
    counts: Counter[str] = Counter()
    for member in members:
        origin = retry_origin(member)
        if origin is not None:
            counts[origin[0]] += 1
    return counts


@runtime_checkable
class Inspectable(Protocol):
    """What ``status`` and ``results`` read from a broker."""

    async def queue_counts(self, queues: Sequence[str]) -> list[QueueCounts]:
        """The counts of each queue, in order (an unknown queue counts all zeros)."""
        ...

    async def peek_results(self, destination: str, limit: int) -> list[str]:
        """Up to ``limit`` records of a result list, oldest first, without removing them."""
        ...

    async def remove_result(self, destination: str, record: str) -> bool:
        """Remove the oldest copy of ``record`` from a result list; False if absent."""
        ...
