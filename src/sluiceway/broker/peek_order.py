"""The order :meth:`~sluiceway.broker.base.Broker.peek` reads a queue in.

Scores are deadlines, so the default, ``EARLIEST_DEADLINE`` (ascending score, ties by member),
serves the request with the least time left first. ``LATEST_DEADLINE`` is its exact reverse
(descending score, then descending member): under equal relative deadlines that is newest first,
and in general it serves the requests with the most time left. The processor reads a queue that
way while it is overloaded (:mod:`sluiceway.processor.overload_order`), when the head of the
queue holds the requests whose callers are about to give up. Only the read order changes:
entries, keys and scores stay as they are, and ``offset`` counts from the end being read.

Standard library only: the broker protocol imports it.
"""

from __future__ import annotations

from enum import Enum
from typing import Final, TypeVar

__all__ = ["EARLIEST_DEADLINE", "LATEST_DEADLINE", "PeekOrder"]

T = TypeVar("T")


class PeekOrder(Enum):
    """Which end of a queue a peek starts from (the value names the order in metrics)."""

    EARLIEST_DEADLINE = "earliest_deadline"
    LATEST_DEADLINE = "latest_deadline"

    @property
    def reverse(self) -> bool:
        """True for the descending read."""
        return self is PeekOrder.LATEST_DEADLINE

    @property
    def sql(self) -> str:
        """The ``ORDER BY`` list of this order over a table of ``score`` and ``member``."""
        return "score DESC, member DESC" if self.reverse else "score, member"

    def span(self, low: T, high: T) -> tuple[T, T]:
        """The bounds of a range in reading order: Redis ``ZRANGE ... BYSCORE REV`` takes the
        highest score first."""
        return (high, low) if self.reverse else (low, high)


# The members as names of their own, so a signature's default fits on its line.
EARLIEST_DEADLINE: Final = PeekOrder.EARLIEST_DEADLINE
LATEST_DEADLINE: Final = PeekOrder.LATEST_DEADLINE
