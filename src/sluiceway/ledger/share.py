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
replicas holds as much as it does (a local share, C / replicas), never the whole pool. For one
lease time after the ledger was lost it also counts what the others held when it last heard
(the larger of the two): the ledger itself would keep a silent replica's leases that long, and
a replica holding more than its share then still holds it, so the local shares cannot add up
to more than the pool while those requests run. A request that started before the loss and
runs longer than a lease time on a replica above its share is the one way past C.

Back from a loss (a restarted Redis is empty), the ledger is rebuilt as each replica's next
call states its leases; until every replica known before has done so (or a lease time passed),
the local share still applies as a floor, so the first replica back does not take the pool.
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
    """The ledger as the last call left it.

    ``others``: requests the other live replicas hold (while away: what they held when last
    heard, until ``until``); ``live``: live replicas, this one included; ``connected``: the
    last call reached Redis; ``expected``: the replicas known before the ledger was lost, while
    they have not all stated their leases again (0 otherwise); ``until``: clock seconds when
    the others' last count (away) or the wait for ``expected`` (back) stops applying: one
    lease time, after which the ledger itself forgets a silent replica."""

    others: int = 0
    live: int = 1
    connected: bool = True
    expected: int = 0
    until: float = 0.0

    def sharing(self, now: float) -> int:
        """The replicas a local share divides the pool by; 1 while the ledger's count is
        complete (no share: the count is exact)."""
        if self.connected and (self.live >= self.expected or now >= self.until):
            return 1
        return max(self.live, self.expected, 1)

    def others_for(self, own: int, now: float) -> int:
        """The other replicas' requests to assume: the ledger's count when it is complete,
        else at least as many as this replica holds for each other replica it knows of."""
        replicas = self.sharing(now)
        if replicas == 1:
            return self.others
        return max(self.others, own * (replicas - 1))

    def lost(self, now: float, lease: float) -> LedgerView:
        """Redis stopped answering at ``now``."""
        return LedgerView(self.others, self.live, False, max(self.live, self.expected), now + lease)

    def aged(self, now: float) -> LedgerView:
        """Still away at ``now``: the others' last count is forgotten after one lease time."""
        if self.connected or now < self.until or self.others == 0:
            return self
        return replace(self, others=0)

    def synced(self, others: int, live: int, now: float, lease: float) -> LedgerView:
        """A call answered: exact once every replica known before a loss is back (or one
        lease time passed: the missing ones are gone)."""
        if not self.connected:
            return LedgerView(others, live, True, max(self.expected, self.live), now + lease)
        if self.expected > live and now < self.until:
            return LedgerView(others, live, True, self.expected, self.until)
        return LedgerView(others, live, True)


def with_others(
    view: CapacityView, own: int, measured: int, ledger: LedgerView, now: float
) -> CapacityView:
    """``view`` with the other replicas' requests the readings do not show yet.

    ``own``: requests this replica has in flight; ``measured``: the requests the view's
    endpoint snapshots count (readings and own counts combined)."""
    if view.pool_empty:
        return view
    beyond = max(0, measured - own)
    extra = max(0, ledger.others_for(own, now) - beyond)
    replicas = ledger.sharing(now)
    if extra == 0 and replicas == 1:
        return view
    added = extra * view.request_cost
    stages = tuple((name, value + added) for name, value in view.stages)
    return replace(  # under a local share each dispatch counts once per replica
        view,
        saturation=view.saturation + added,
        stages=stages,
        request_cost=view.request_cost * replicas,
        token_cost=view.token_cost * replicas,
    )


def pool_cap(view: CapacityView, own: int, measured: int, ledger: LedgerView, now: float) -> int:
    """The pool-wide request total ``view`` (already :func:`with_others`) allows at saturation
    1.0; unbounded when the detector has no per-request cost (tokens mode)."""
    if view.request_cost <= 0:
        return UNBOUNDED
    counted = own + max(measured - own, ledger.others_for(own, now), 0)
    room = math.floor((1.0 - view.saturation) / view.request_cost + _EPS)
    return max(0, counted + room * ledger.sharing(now))  # a shared request costs that many
