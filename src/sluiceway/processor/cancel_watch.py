"""In-flight cancellation, so a cancelled request stops using the model server: one watcher
per processor checks the cancel markers of every request in flight each
``cancel_check_interval`` (scaled seconds) and aborts the attempts whose generation was
cancelled. One task for all requests instead of one each."""

from __future__ import annotations

import asyncio
import logging

import anyio

from sluiceway.broker.base import Broker
from sluiceway.clock import Clock

__all__ = ["CancelWatch"]

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (request id, request token)


class CancelWatch:
    """Attempts in flight by request generation, each as the cancel scope it runs in;
    :meth:`run` cancels the scopes of cancelled requests."""

    def __init__(self) -> None:
        self._attempts: dict[Key, anyio.CancelScope] = {}

    def __len__(self) -> int:
        return len(self._attempts)

    def track(self, key: Key, attempt: anyio.CancelScope) -> None:
        self._attempts[key] = attempt

    def untrack(self, key: Key) -> None:
        self._attempts.pop(key, None)

    async def check_once(self, broker: Broker) -> int:
        """Abort every tracked attempt whose cancel marker is set; returns how many."""
        keys = list(self._attempts)
        found = await asyncio.gather(
            *(broker.is_cancelled(rid, token) for rid, token in keys), return_exceptions=True
        )
        aborted = 0
        for key, cancelled in zip(keys, found, strict=True):
            if isinstance(cancelled, BaseException):
                log.warning("cancel check of %s failed: %s", key[0], cancelled)
                continue
            attempt = self._attempts.get(key)
            if cancelled and attempt is not None and not attempt.cancel_called:
                attempt.cancel()
                aborted += 1
        return aborted

    async def run(self, broker: Broker, clock: Clock, interval: float) -> None:
        """Check every ``interval`` scaled seconds while anything is in flight."""
        while True:
            await clock.sleep(interval)
            if self._attempts:
                try:
                    await self.check_once(broker)
                except Exception:
                    log.exception("cancel watch round failed")
