"""One processor's share of a pool-wide in-flight target (pure arithmetic; no I/O).

Several processors on the same queues each turn a budget b into an in-flight target. Alone, a
processor admits while its in flight is below ``ceil(b x W)`` (docs/design-rules.md rule 9);
M processors doing the same would hold M times that. Split by live membership instead: the
processor ranked r (0-based, by member name) among the M live ones gets

    ceil((b x W - r) / M)

and the M shares add up to exactly ``ceil(b x W)`` for any real b x W >= 0 (Hermite's
identity), so the pool holds what one processor would. With M = 1 the share is the target
itself; a budget of 1 sets no cap, as for one processor.

The live count and rank come from the processor's replica set (``sluiceway.ledger``); without
Redis a processor keeps its last known share, and with none ever seen it is alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["SOLE", "PoolShare", "in_flight_target"]


@dataclass(frozen=True, slots=True)
class PoolShare:
    """This processor among its pool's live processors: ``live`` of them (itself included),
    ``rank`` its place among them (0-based)."""

    live: int = 1
    rank: int = 0

    def __post_init__(self) -> None:
        if self.live < 1 or not 0 <= self.rank < self.live:
            raise ValueError(f"rank {self.rank} of {self.live} live processors")

    def split(self, total: float) -> int:
        """This processor's part of a pool-wide ``total`` (>= 0); the parts of all live
        processors add up to ``ceil(total)``."""
        return max(0, math.ceil((total - self.rank) / self.live))


SOLE = PoolShare()  # a processor alone (no membership, or the only live one)


def in_flight_target(budget: float, workers: int, share: PoolShare = SOLE) -> int | None:
    """This processor's in-flight target for ``budget`` over ``workers``: its part of
    ``ceil(budget x workers)``; None (no cap) at a budget of 1."""
    if budget >= 1.0:
        return None
    return share.split(max(0.0, budget) * workers)
