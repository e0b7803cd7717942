"""Who wakes whom inside one processor, in one place. No task polls for work it could be told
about: each wake-up is a named event below, and each event fires the :class:`Pulse` of the
tasks that wait for it.

Event (raised by) -> who wakes:

- ``room_in_buffer`` (a pool's ready buffer, when a slot frees) -> ingest polls again;
- ``gate_may_admit`` (a queue gate's signal changed: budget, quota) -> ingest;
- ``claim_released`` (the recorder, when a request's claim leaves the book) -> a draining stop
  (it waits for no claim left); ingest too when the request passed a queue gate (its budget or
  quota slot is free);
- ``entries_returned`` (the reclaimer's expired claims, the retry mover's due retries) ->
  ingest;
- ``retry_parked`` (the recorder, when a retry is scheduled) -> the retry mover re-reads the
  next due time;
- ``queues_changed`` (hot reload retired a queue, stop, a drain's fresh poll) -> ingest
  re-checks whether to run.

Two belong to one owner each and stay with it: ``ReadyBuffer.capacity_changed`` (an item of
that pool finished, or its pool gate's signal changed: its parked workers re-try the gate one
at a time, best first; :mod:`~sluiceway.processor.parking`) and ``QueueIngest.polled`` (a
:class:`Pulse`: a poll of that queue finished, a draining stop counts them).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

__all__ = ["Pulse", "Wakeups"]


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


@dataclass
class Wakeups:
    """The processor-wide events and the pulses their waiters wait on: ``work`` (ingest),
    ``claims`` (a draining stop), ``retries`` (the retry mover)."""

    work: Pulse = field(default_factory=Pulse)
    claims: Pulse = field(default_factory=Pulse)
    retries: Pulse = field(default_factory=Pulse)

    def room_in_buffer(self) -> None:
        self.work.fire()

    def gate_may_admit(self) -> None:
        self.work.fire()

    def claim_released(self, *, gated: bool) -> None:
        """A claim left the book; ``gated``: its request passed a queue gate, which may admit
        more now. Without a gate only room in the ready buffer lets ingest take more, and the
        buffer says so itself."""
        self.claims.fire()
        if gated:
            self.work.fire()

    def entries_returned(self) -> None:
        self.work.fire()

    def retry_parked(self) -> None:
        self.retries.fire()

    def queues_changed(self) -> None:
        self.work.fire()
