"""Which order one queue is read in: by deadline, or newest first while it is overloaded.

Under sustained overload (arrivals beyond capacity) a queue read by deadline serves its oldest
request first (with equal relative deadlines, earliest deadline first is first in, first out),
and that is always the request whose caller is about to give up: goodput collapses. The field's
answer is adaptive LIFO with CoDel's trigger: when the oldest pending request's sojourn has
stayed above ``target`` for at least ``interval``, read the queue newest first
(``LATEST_DEADLINE``, the requests with the most time left) until it is empty or its oldest
sojourn is below the target again, then return to deadline order. A single spike above the
target does not flip it; the sojourn has to stay above for a whole interval, every time.

Pure: no I/O and no clock; ingest (:mod:`~sluiceway.processor.queue_order`) measures the queue
after each pass and feeds the numbers in.
"""

from __future__ import annotations

from sluiceway.broker.peek_order import EARLIEST_DEADLINE, LATEST_DEADLINE, PeekOrder

__all__ = ["OverloadOrder"]


class OverloadOrder:
    """The peek order of one queue. ``target`` and ``interval`` are scaled seconds; either at 0
    keeps deadline order for good (the adaptive order is off)."""

    def __init__(self, target: float, interval: float) -> None:
        self.target = target
        self.interval = interval
        self._order = EARLIEST_DEADLINE
        self._above_since: float | None = None  # when the sojourn last rose above the target

    @property
    def enabled(self) -> bool:
        return self.target > 0 and self.interval > 0

    @property
    def order(self) -> PeekOrder:
        """The order for the next pass."""
        return self._order

    def above_for(self, now: float) -> float:
        """How long the oldest sojourn has stayed above the target (0 when it is not above)."""
        return 0.0 if self._above_since is None else max(0.0, now - self._above_since)

    def observe(self, now: float, oldest_sojourn: float | None, backlog: int) -> PeekOrder:
        """Take what one pass saw and return the order for the next one.

        ``oldest_sojourn``: how long the oldest pending request has waited, None when no
        live request was seen (the state holds: an unknown is not a drained queue);
        ``backlog``: pending entries seen, 0 when the queue is empty.
        """
        if not self.enabled or backlog <= 0:
            return self._back_to_deadline_order()
        if oldest_sojourn is None:
            return self._order
        if oldest_sojourn < self.target:
            return self._back_to_deadline_order()
        if self._above_since is None:
            self._above_since = now
        if self.above_for(now) >= self.interval:
            self._order = LATEST_DEADLINE
        return self._order

    def _back_to_deadline_order(self) -> PeekOrder:
        self._above_since = None
        self._order = EARLIEST_DEADLINE
        return self._order
