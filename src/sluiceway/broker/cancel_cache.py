"""Fewer round trips for cancellation checks when Redis publishes string keyspace events.

A processor asks "is this generation cancelled?" several times per request (at dequeue, right
before the send, then every cancel-check interval while in flight). Once a check has read
``request-cancel:<id>`` from Redis and found no matching marker, later checks of the same
generation can be answered locally for as long as the broker's subscription to keyspace events
on ``request-cancel:*`` is live: any later write to the marker publishes an event that
invalidates the entry, and the next check reads Redis again.

Guarantees: never a false "cancelled". A local "not cancelled" may lag a cancel by the event's
delivery time (milliseconds), which the in-flight checks absorb. When the subscription breaks,
everything is forgotten and every check reads Redis until it is confirmed again.
"""

from __future__ import annotations

__all__ = ["CancelCache"]


class CancelCache:
    """Generations known not cancelled, invalidated by keyspace events; bounded in size.

    A logical clock orders reads, events and subscription changes: a read remembered as
    "clear" must have started after the subscription went live and after the last event on
    its key.
    """

    def __init__(self, *, max_entries: int = 100_000) -> None:
        self._clear: dict[str, set[str]] = {}
        self._invalidated: dict[str, int] = {}
        self._seq = 0
        self._floor = 0
        self._live = False
        self._max = max_entries

    def _tick(self) -> int:
        self._seq += 1
        return self._seq

    @property
    def live(self) -> bool:
        return self._live

    def set_live(self, live: bool) -> None:
        """The subscription was confirmed (True) or lost (False: forget everything)."""
        self._live = live
        self._floor = self._tick()
        if not live:
            self._clear.clear()
            self._invalidated.clear()

    def known_clear(self, request_id: str, token: str) -> bool:
        """True when a live subscription vouches that this generation has no cancel marker."""
        return self._live and token in self._clear.get(request_id, ())

    def mark(self) -> int:
        """Take before reading Redis; pass to :meth:`remember_clear` after."""
        return self._tick()

    def remember_clear(self, request_id: str, token: str, *, since: int) -> None:
        """Remember a "no marker" read begun at ``since`` unless anything newer intervened."""
        if not self._live or since <= self._floor:
            return
        if self._invalidated.get(request_id, 0) > since:
            return
        if len(self._clear) >= self._max:
            self._clear.clear()
        self._clear.setdefault(request_id, set()).add(token)

    def invalidate(self, request_id: str) -> None:
        """A keyspace event touched ``request-cancel:<request_id>``."""
        self._clear.pop(request_id, None)
        self._invalidated[request_id] = self._tick()
        if len(self._invalidated) > self._max:
            self._invalidated.clear()
            self._clear.clear()
            self._floor = self._tick()

    def forget(self, request_id: str) -> None:
        """The request finished here; drop what was remembered about it."""
        self._clear.pop(request_id, None)
