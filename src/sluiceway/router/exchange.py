"""One proxied request's live state, shared by its handler and whoever must stop it.

The handler task is the only one that writes to the client. Its waits that may be cut short
(queued in flow control, streaming from upstream) run inside :meth:`Exchange.interruptible`, an
anyio cancel scope. Eviction and client disconnect call :meth:`Exchange.interrupt`, which flags
the exchange and cancels that scope: the upstream call it was awaiting is aborted at once
(aiohttp closes the connection; the model server frees the slot), and the handler carries on
after the scope and reads the flag. Nobody cancels or un-cancels the handler task itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio

from sluiceway.flowcontrol.base import Usage
from sluiceway.router.pool import PoolMember

__all__ = ["Exchange"]


@dataclass(slots=True)
class Exchange:
    """``started``: the response head was sent; ``complete``: the last byte is being sent
    (a late disconnect notice is then ignored); ``member``: the endpoint it was given, among
    those serving ``model``. Once flow control has queued it: ``band``, the band it queued in;
    ``waited``, seconds from enqueue to dispatch or drop (None: never queued); ``budget``, its
    queue TTL in seconds (None: unlimited)."""

    request_id: str
    member: PoolMember | None = None
    tokens: int = 0
    prefix: bytes = b""
    model: str = ""
    started: bool = False
    complete: bool = False
    evicted: bool = False
    disconnected: bool = False
    usage: Usage | None = None
    band: int = 0
    waited: float | None = None
    budget: float | None = None
    dispatched_at: float = 0.0  # perf_counter seconds when it got its endpoint (0: not yet)
    lease: asyncio.Future[None] | None = None  # the pool ledger's lease, when one is kept
    _scope: anyio.CancelScope | None = None

    @property
    def interrupted(self) -> bool:
        return self.evicted or self.disconnected

    @contextmanager
    def interruptible(self) -> Iterator[anyio.CancelScope]:
        """A wait that :meth:`interrupt` cuts short; an interrupt that came first cuts it at
        once. Check :attr:`interrupted` after the block."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self.interrupted:
                scope.cancel()
            try:
                yield scope
            finally:
                self._scope = None

    def interrupt(self, *, evicted: bool = False) -> None:
        """Evict or drop this exchange: flag it, then cut its current wait short."""
        if self.complete:
            return
        if evicted:
            self.evicted = True
        else:
            self.disconnected = True
        if self._scope is not None:
            self._scope.cancel()
