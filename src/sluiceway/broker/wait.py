"""Waiting for a broker at start-up (``--wait-for-broker SECONDS``).

In a deployment the processor often starts before Redis answers. Instead of failing at once,
it may try to reach the broker again until a deadline, saying once that it waits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from sluiceway.errors import BrokerError

__all__ = ["Closable", "wait_for_broker"]

log = logging.getLogger(__name__)


class Closable(Protocol):
    """Whatever the opener returns: a broker, or a broker with its quota stores."""

    async def aclose(self) -> None: ...


async def wait_for_broker(
    open_broker: Callable[[], Awaitable[Closable]],
    *,
    within: float,
    what: str,
    interval: float = 0.5,
) -> None:
    """Open (and close) the broker until it answers; BrokerError after ``within`` wall seconds.

    ``what`` names the broker in the log line (credentials already masked).
    """
    deadline = time.monotonic() + within
    said = False
    while True:
        try:
            broker = await open_broker()
        except BrokerError as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrokerError(f"{what} still unreachable after {within:g} s: {exc}") from None
            if not said:
                log.warning("waiting up to %g s for the broker %s: %s", within, what, str(exc))
                said = True
            await asyncio.sleep(min(interval, left))
            continue
        await broker.aclose()
        if said:
            log.info("broker %s answers", what)
        return
