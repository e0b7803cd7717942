"""Workers parked at their pool's gate, and the order they try it again in.

A pool gate that says "wait" (a full ``aimd`` window, a saturated pool) parks the worker with
its request. Under overload the parked requests are the gate's backlog: woken all at once,
asyncio resumes them oldest parked first, so a freed slot went to the request that had waited
longest, the one closest to its deadline, whatever order the queue is read in. Here, when
capacity changes, parked workers try again one at a time in the ready
buffer's order (lane, then the queue's order: earliest deadline, or newest first while the
queue is overloaded), each passing the turn on when its attempt is over, so every parked
worker still tries once per change, best first.
"""

from __future__ import annotations

import asyncio
import itertools

__all__ = ["ParkingLot", "Rank"]

Rank = tuple[int, float]  # (lane index, order inside the queue): smaller goes first


class ParkingLot:
    """``fire()`` when capacity may have changed; ``generation`` counts fires, so a worker
    that read it before its gate attempt does not miss a fire that happened meanwhile."""

    def __init__(self) -> None:
        self.generation = 0
        self._seq = itertools.count()
        # rank, arrival, the generation it parked in, its wake-up
        self._parked: list[tuple[Rank, int, int, asyncio.Future[None]]] = []

    def fire(self) -> None:
        self.generation += 1
        self.pass_turn()

    def pass_turn(self) -> None:
        """A worker's attempt is over (it parks again, or leaves the gate): the best parked
        worker that has not tried since the last fire tries now."""
        best = None
        for entry in self._parked:
            if entry[3].done() or entry[2] >= self.generation:
                continue
            if best is None or entry[:2] < best[:2]:
                best = entry
        self._parked = [e for e in self._parked if not e[3].done() and e is not best]
        if best is not None:
            best[3].set_result(None)

    async def wait(self, rank: Rank, block_for: float | None = None, *, since: int) -> bool:
        """Park until it is this worker's turn (True) or ``block_for`` wall seconds passed
        (False); at once when a fire came after generation ``since``. Passes the turn on."""
        self.pass_turn()
        if since != self.generation:
            return True
        future = asyncio.get_running_loop().create_future()
        self._parked.append((rank, next(self._seq), self.generation, future))
        try:
            await asyncio.wait_for(asyncio.shield(future), block_for)
        except TimeoutError:
            future.cancel()
            return False
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.pass_turn()  # woken, then cancelled: the turn goes to the next
            future.cancel()
            raise
        return True

    def __len__(self) -> int:
        return sum(not e[3].done() for e in self._parked)
