"""Hooks run after reclaim rounds, so every lease that rides on a claim expires with it.

A processor killed with SIGKILL leaves claims and quota holders behind; the reclaimer of any
live processor returns the claims, and the hooks registered here (the quota stores' reapers)
drop the holders in the same round, with the same caller-supplied ``now``. A hook runs at most
once per scaled second, however many queues a round reclaims.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

__all__ = ["LeaseHooks"]

_log = logging.getLogger(__name__)
_MIN_SPACING_SECONDS = 1.0


class LeaseHooks:
    """Callbacks ``hook(now)`` (``now`` in scaled Unix seconds); failures are logged."""

    def __init__(self) -> None:
        self._hooks: list[Callable[[float], Awaitable[object]]] = []
        self._last: float | None = None

    def add(self, hook: Callable[[float], Awaitable[object]]) -> None:
        self._hooks.append(hook)

    async def run(self, now: float) -> None:
        if not self._hooks or (self._last is not None and now - self._last < _MIN_SPACING_SECONDS):
            return
        self._last = now
        for hook in self._hooks:
            try:
                await hook(now)
            except Exception as exc:  # a failed reap must not stop redelivery
                _log.warning("lease hook failed: %s", exc)
