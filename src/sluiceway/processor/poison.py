"""Poison entries and repeating faults (pure): one bad entry must never stop a queue or a
processor (issue 26).

- :func:`reserved_keys` / :func:`route_problem`: a result route may never name a key the
  processor reads from (its queues, their claim, invalid and retry keys): the result LPUSH
  would turn that queue into a list and its ingest would fail with ``WRONGTYPE`` for ever.
- :class:`FaultTally`: the same fault of the same thing (an entry, a queue's poll) is told
  once, with how often it repeated, and retried with a growing :func:`fault_backoff`.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import fields

from sluiceway.broker.keys import DEFAULT_RETRY_QUEUE, Keyspace

__all__ = [
    "MAX_IDENTICAL_FAULTS",
    "FaultTally",
    "describe",
    "fault_backoff",
    "reserved_keys",
    "route_problem",
]

# A request that fails the same way this many times in a row gets a terminal result.
MAX_IDENTICAL_FAULTS = 3


@functools.lru_cache(maxsize=16)
def reserved_keys(
    queue_names: tuple[str, ...], retry_queue_name: str = DEFAULT_RETRY_QUEUE
) -> frozenset[str]:
    """Every key a processor reading ``queue_names`` reads from, standalone and cluster names
    (cached: every result write asks)."""
    keys: set[str] = set()
    for cluster in (False, True):
        keyspace = Keyspace(cluster=cluster, retry_queue_name=retry_queue_name)
        for name in queue_names:
            queue = keyspace.queue(name)
            keys.update(getattr(queue, f.name) for f in fields(queue))
    keys.discard("")
    return frozenset(keys)


def route_problem(route: str | None, reserved: frozenset[str]) -> str | None:
    """Why an entry's own result route may not be used, or None."""
    if route is not None and route in reserved:
        return f"result_queue_name {route!r} names a key this processor reads from"
    return None


def describe(exc: BaseException) -> str:
    """One line naming a fault: its type and message (no traceback)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def fault_backoff(repeats: int, base: float, cap: float) -> float:
    """Seconds to wait after the ``repeats``-th identical fault in a row (1 = the first)."""
    return min(cap, base * 2.0 ** max(0, repeats - 1))


class FaultTally:
    """How often each subject's last fault repeated in a row (bounded, oldest forgotten)."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._capacity = capacity
        self._last: OrderedDict[object, tuple[str, int]] = OrderedDict()

    def seen(self, subject: object, fault: str) -> int:
        """Record ``fault`` of ``subject``; its count in a row (1: new, tell it)."""
        previous, count = self._last.pop(subject, ("", 0))
        count = count + 1 if previous == fault else 1
        self._last[subject] = (fault, count)
        while len(self._last) > self._capacity:
            self._last.popitem(last=False)
        return count

    def clear(self, subject: object) -> int:
        """``subject`` went well; how many faults in a row it had before."""
        return self._last.pop(subject, ("", 0))[1]
