"""What the ledger adds to one replica's capacity view, and the cap it asks the ledger for
(pure arithmetic; no I/O).

A replica's saturation detector sees its own requests at once, and the other replicas' only
through the model servers' readings, a scrape late. The ledger knows what every replica holds
now, so the view adds the requests the others hold beyond what the readings already show:

    extra = max(0, others - measured_beyond_own)

(``measured_beyond_own``: what the endpoint readings count beyond this replica's own requests;
the readings and the ledger combine by taking the larger, so a request is never counted twice
and traffic that bypasses the routers still counts). Each such request costs the detector's
per-request saturation.

The cap is the pool-wide number of requests the view allows at the set point (saturation 1.0):
everything counted now plus the room left. With the concurrency detector it is exactly
endpoints x ``maxConcurrency``. The ledger grants a lease only while the pool-wide total stays
within it, so replicas whose views raced still never admit more than the pool holds together.

Without Redis a replica has no view of the others: it assumes each of the last known live
replicas holds as much as it does (a local share, C / replicas), never the whole pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sluiceway.flowcontrol.base import CapacityView
from sluiceway.ledger.replicas import UNBOUNDED

__all__ = ["LedgerView", "pool_cap", "with_others"]

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class LedgerView:
    """The ledger as the last sync left it: ``others``: requests the other live replicas hold;
    ``live``: live replicas, this one included; ``connected``: the last sync reached Redis."""

    others: int = 0
    live: int = 1
    connected: bool = True

    def others_for(self, own: int) -> int:
        """The other replicas' requests to assume: the ledger's count, or without Redis as many
        as this replica holds for each other replica last seen alive."""
        if self.connected:
            return self.others
        return own * (max(1, self.live) - 1)


def with_others(view: CapacityView, own: int, measured: int, ledger: LedgerView) -> CapacityView:
    """``view`` with the other replicas' requests the readings do not show yet.

    ``own``: requests this replica has in flight; ``measured``: the requests the view's
    endpoint snapshots count (readings and own counts combined)."""
    if view.pool_empty:
        return view
    beyond = max(0, measured - own)
    extra = max(0, ledger.others_for(own) - beyond)
    if extra == 0:
        return view
    added = extra * view.request_cost
    stages = tuple((name, value + added) for name, value in view.stages)
    return replace(view, saturation=view.saturation + added, stages=stages)


def pool_cap(view: CapacityView, own: int, measured: int, ledger: LedgerView) -> int:
    """The pool-wide request total ``view`` (already :func:`with_others`) allows at saturation
    1.0; unbounded when the detector has no per-request cost (tokens mode)."""
    if view.request_cost <= 0:
        return UNBOUNDED
    counted = own + max(measured - own, ledger.others_for(own), 0)
    room = math.floor((1.0 - view.saturation) / view.request_cost + _EPS)
    return max(0, counted + room)
