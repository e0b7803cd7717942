"""Wake-ups inside one process: a :class:`Pulse` wakes every task waiting on it (no polling)."""

from __future__ import annotations

import asyncio

__all__ = ["Pulse"]


class Pulse:
    """Each ``fire()`` wakes all current waiters; ``wait`` gives up after wall ``block_for``.

    ``generation`` counts fires, so a waiter that read it before doing its work can pass it as
    ``since`` and not miss a fire that happened meanwhile.
    """

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None
        self.generation = 0

    def fire(self) -> None:
        self.generation += 1
        if self._future is not None and not self._future.done():
            self._future.set_result(None)
        self._future = None

    async def wait(self, block_for: float | None = None, *, since: int | None = None) -> bool:
        """True when fired (or fired after generation ``since``), False on timeout
        (``block_for`` wall seconds; None = forever)."""
        if since is not None and since != self.generation:
            return True
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(asyncio.shield(self._future), block_for)
        except TimeoutError:
            return False
        return True
