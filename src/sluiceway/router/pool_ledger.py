"""The router's side of the capacity ledger several replicas of one pool share.

:class:`PoolLedger` ties the flow controller to the Redis ledger
(:class:`~sluiceway.ledger.leases.LeaseLedger`):

* each cycle's view adds the requests the other replicas hold beyond what the readings show,
  and what they wait for in higher bands (:mod:`sluiceway.ledger.share`), and sets the pool-wide
  cap the ledger grants within;
* tenants inside a band are shared between replicas (:mod:`sluiceway.ledger.fair_share`):
  each call states this replica's usage and tenants per band it queues in, and each cycle
  leaves the room to replicas whose tenants have had less;
* after each cycle it tells the ledger whether this replica holds demand back and in which
  bands it waits, and, when its highest waiting band is held back with no victim of its own,
  orders evictions from the replicas running requests below 0
  (:mod:`sluiceway.ledger.remote_eviction`);
* an order addressed to this replica evicts its own requests, lowest band and newest first,
  as a local eviction would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from prometheus_client import CollectorRegistry

from sluiceway.clock import Clock
from sluiceway.flowcontrol.bands import Band
from sluiceway.flowcontrol.base import CapacityView, EndpointSnapshot
from sluiceway.flowcontrol.controller import Cycle, FlowController
from sluiceway.flowcontrol.fairness import GlobalStrict, TokenFair
from sluiceway.ledger.fair_share import BandDemand, fair_reserve, tenant_tag
from sluiceway.ledger.leases import LeaseLedger, LedgerSettings
from sluiceway.ledger.metrics import LedgerCollector
from sluiceway.ledger.remote_eviction import RemoteEviction
from sluiceway.ledger.replicas import EvictionOrder
from sluiceway.ledger.share import pool_cap, with_others

__all__ = ["PoolLedger"]


class PoolLedger:
    def __init__(
        self,
        settings: LedgerSettings,
        pool: str,
        clock: Clock,
        controller: FlowController,
        *,
        kick: Callable[[], None],
        evict: Callable[[str], None],
        registry: CollectorRegistry,
    ) -> None:
        self.controller = controller
        self._clock = clock
        self._evict = evict
        eviction = controller.settings.eviction
        self.remote = RemoteEviction(eviction.timeout, eviction.max_per_decision)
        self.leases = LeaseLedger.connect(
            settings,
            f"router/{pool}",
            clock,
            on_change=kick,
            demand=self._queued,
            on_evict=self._ordered,
            fair=self._fair,
        )
        registry.register(LedgerCollector(self.leases, pool))

    def view(
        self, view: CapacityView, own: int, snaps: list[EndpointSnapshot], now: float
    ) -> CapacityView:
        """``view`` with the other replicas in it; sets the cap the ledger grants within."""
        leases = self.leases
        measured = sum(s.inflight_requests or 0 for s in snaps)
        view = with_others(view, own, measured, leases.view, now)
        leases.cap = pool_cap(view, own, measured, leases.view, now)
        if leases.others_waiting and leases.view.connected:
            waiting = tuple(sorted(leases.others_waiting.items()))
            mine = {d.band: d for d in self._fair()}
            reserve = fair_reserve(mine, leases.others_demand) if mine else {}
            view = replace(
                view, waiting_elsewhere=waiting, fair_reserve=tuple(sorted(reserve.items()))
            )
        return view

    def after(self, cycle: Cycle) -> None:
        """Tell the ledger what the cycle left waiting; order evictions elsewhere if needed."""
        leases, fc = self.leases, self.controller
        leases.hold_back(fc.totals.queued > 0 and leases.view.others > 0)
        leases.demand_changed(frozenset(b.priority for b in fc.bands if b.queued))
        if cycle.dispatched:
            self.remote.served(len(cycle.dispatched))
        if cycle.stopped_at is None or cycle.evict or not fc.settings.eviction.enabled:
            return
        top = next((b for b in fc.bands if b.queued), None)
        if top is None or not leases.victims or not fc.evictor.gate_open():
            return
        orders = self.remote.decide(self._clock.now(), top.priority, top.queued, leases.victims)
        leases.order(orders)

    def _queued(self) -> dict[int, int]:
        return {b.priority: b.queued for b in self.controller.bands if b.queued}

    def _fair(self) -> list[BandDemand]:
        """This replica's demand per band, as fairness between replicas reads it."""
        return [_demand(b) for b in self.controller.bands if b.queued and _shared(b)]

    def _ordered(self, order: EvictionOrder) -> None:
        for request_id in self.controller.evict_for(order.count, order.below, self._clock.now()):
            self._evict(request_id)


def _shared(band: Band) -> bool:
    """Fairness between tenants applies across replicas (global-strict has none)."""
    return not isinstance(band.settings.fairness, GlobalStrict)


def _demand(band: Band) -> BandDemand:
    tenants = tuple(tenant_tag(fid) for fid, f in band.flows.items() if f.queued)
    if isinstance(band.settings.fairness, TokenFair) and band.inflight:
        usage, unit = band.charge, band.charge / band.inflight
    else:
        usage, unit = float(band.inflight), 1.0
    return BandDemand(band.priority, usage, band.queued, tenants, unit)
