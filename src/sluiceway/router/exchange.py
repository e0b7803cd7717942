"""One proxied request's live state, shared by its handler and the router's callbacks.

The handler task is the only one that writes to the client. Eviction and client disconnect
reach it by cancelling that task after setting a flag here, so the upstream call it is
awaiting is aborted at once (aiohttp closes the connection; the model server frees the slot).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sluiceway.flowcontrol.base import Usage
from sluiceway.router.pool import PoolMember

__all__ = ["Exchange"]


@dataclass(slots=True)
class Exchange:
    """``started``: the response head was sent; ``complete``: the last byte is being sent
    (a late disconnect notice is then ignored); ``member``: the endpoint it was given."""

    request_id: str
    task: asyncio.Task[None] | None = None
    member: PoolMember | None = None
    tokens: int = 0
    prefix: bytes = b""
    started: bool = False
    complete: bool = False
    evicted: bool = False
    disconnected: bool = False
    usage: Usage | None = None

    def interrupt(self, *, evicted: bool = False) -> None:
        """Evict or drop this exchange: flag it, then cancel its handler."""
        if self.complete or self.task is None:
            return
        if evicted:
            self.evicted = True
        else:
            self.disconnected = True
        self.task.cancel()
