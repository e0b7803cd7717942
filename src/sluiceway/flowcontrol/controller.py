"""The flow controller: a pure, synchronous state machine (no await, no I/O, no clock reads: the
adapter feeds it).

Callers feed it events and read back values; it never reads a clock, sleeps or does I/O:

* :meth:`FlowController.add` - a request arrives: queued (None) or rejected (a Finalized);
* :meth:`FlowController.next_dispatches` - run one dispatch cycle against a capacity view:
  expire spent budgets, then dispatch strictly by band, as many as the view allows
  (docs/design-rules.md rule 21), then decide evictions on a head-of-line stop;
* :meth:`FlowController.on_finished` / :meth:`FlowController.on_cancelled` - a dispatched
  stream ended, or a client went away (a queued request is removed at once);
* :meth:`FlowController.next_deadline` - when the caller should run a cycle even without events.

Every request is finalized exactly once: each transition starts from a checked state.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sluiceway.flowcontrol.bands import Band
from sluiceway.flowcontrol.base import (
    CapacityView,
    Finalized,
    Item,
    ItemState,
    LimitInput,
    Outcome,
    Request,
    Usage,
)
from sluiceway.flowcontrol.eviction import Evictor, Revocation
from sluiceway.flowcontrol.expiry import Expiry
from sluiceway.flowcontrol.settings import FlowControlSettings

__all__ = ["Cycle", "FlowController", "Totals"]

# Saturation within this of a ceiling counts as reaching it: the loop adds per-dispatch costs
# such as 1/12, and the gate must not let one extra request through on rounding noise.
GATE_EPS = 1e-9


@dataclass(slots=True)
class Cycle:
    """What one dispatch cycle decided.

    ``dispatched``: in dispatch order; ``dropped``: expired while queued; ``evict``: ids of
    in-flight requests the router must cancel (call :meth:`FlowController.on_finished` when
    their streams end); ``saturation``: the view's value; ``ceilings``: per band, in band order;
    ``stopped_at``: priority of the band that stopped the cycle (head-of-line), if any.
    """

    dispatched: list[Finalized] = field(default_factory=list)
    dropped: list[Finalized] = field(default_factory=list)
    evict: list[str] = field(default_factory=list)
    saturation: float = 0.0
    ceilings: Sequence[float] = ()
    stopped_at: int | None = None


def _well_formed(ceilings: Sequence[float], n: int) -> Sequence[float]:
    """Ceilings as the loop needs them: one per band (missing ones fail open at 1.0, as
    upstream pre-fills its buffer) and non-increasing (the contract; enforced, not trusted)."""
    if len(ceilings) == n and all(a >= b for a, b in itertools.pairwise(ceilings)):
        return ceilings
    padded = [*ceilings[:n], *([1.0] * (n - len(ceilings)))]
    return list(itertools.accumulate(padded, min))


@dataclass(slots=True)
class Totals:
    """Global counters: queued requests and bytes, in-flight requests."""

    queued: int = 0
    bytes: int = 0
    inflight: int = 0


class FlowController:
    def __init__(self, settings: FlowControlSettings) -> None:
        self.settings = settings
        self.totals = Totals()
        self.evictor = Evictor(settings.eviction)
        self._bands: list[Band] = [Band(b, static=True) for b in settings.initial_bands()]
        self._by_priority = {b.priority: b for b in self._bands}
        self._desired: frozenset[int] = frozenset()
        self._items: dict[str, Item] = {}
        self._expiry = Expiry(settings.empty_pool_ttl)
        self._seq = itertools.count()
        self._closed = False
        self._next_gc = settings.flow_gc_timeout

    # ---- read-only views -------------------------------------------------------------
    @property
    def bands(self) -> Sequence[Band]:
        """Bands in dispatch order (priority descending)."""
        return self._bands

    @property
    def pool_empty(self) -> bool:
        return self._expiry.pool_empty

    def band(self, priority: int) -> Band | None:
        return self._by_priority.get(priority)

    def state_of(self, request_id: str) -> ItemState | None:
        """QUEUED, IN_FLIGHT, or None when unknown or finished."""
        item = self._items.get(request_id)
        return None if item is None else item.state

    # ---- events ----------------------------------------------------------------------
    def add(self, request: Request, now: float) -> Finalized | None:
        """Queue ``request``; None when queued, else the rejection (capacity, shutdown...)."""
        band = self._by_priority.get(request.priority) or self._by_priority[0]
        if self._closed or request.request_id in self._items:
            return self._rejected(request, band, now, Outcome.REJECTED_OTHER)
        if not self._fits(band, request.byte_size):
            outcome = (
                Outcome.REJECTED_NO_ENDPOINTS if self.pool_empty else Outcome.REJECTED_CAPACITY
            )
            return self._rejected(request, band, now, outcome)
        self._enqueue(request, band, now)
        return None

    def next_dispatches(
        self, now: float, capacity: CapacityView, *, limit: int | None = None
    ) -> Cycle:
        """Run one cycle at ``now``; dispatch at most ``limit`` (default: as many as fit)."""
        self._expiry.observe(now, capacity.pool_empty)
        dropped = [
            self._finish_queued(i, self._expiry_outcome(), now) for i in self._expiry.due(now)
        ]
        self.evictor.advance(now)
        self._maybe_collect(now)
        self._expiry.compact(self.totals.queued)
        view = LimitInput(now, capacity.saturation, self._bands, capacity.request_cost)
        ceilings = _well_formed(self.settings.usage_limit.ceilings(view), len(self._bands))
        if capacity.elsewhere:
            ceilings = [
                min(c, 1.0 - capacity.reserved_above(b.priority))
                for c, b in zip(ceilings, self._bands, strict=True)
            ]
        dispatched: list[Finalized] = []
        sat, stop = capacity.saturation, None
        if not capacity.pool_empty:
            sat, stop = self._dispatch_loop(now, capacity, ceilings, dispatched, limit)
        evict = [] if stop is None else self._evictions(now, stop, sat, ceilings)
        stopped_at = None if stop is None else self._bands[stop].priority
        return Cycle(dispatched, dropped, evict, capacity.saturation, ceilings, stopped_at)

    def evict_for(self, count: int, below: int, now: float) -> list[str]:
        """Evict ``count`` in-flight requests of bands below ``below`` (and below 0), lowest
        band and newest first, for demand another replica has (its ledger order); the router
        stops them as it does its own evictions. Fewer when fewer are evictable."""
        if not self.settings.eviction.enabled:
            return []
        chosen = self.evictor.choose_for(now, count, below)
        return [i.request.request_id for i in chosen]

    def on_finished(
        self, request_id: str, now: float, usage: Usage | None = None
    ) -> Revocation | None:
        """A dispatched request's stream ended (normally, by error, or evicted). Unknown or
        queued ids are ignored. Returns the revocation it confirmed, if it was evicted."""
        item = self._items.get(request_id)
        if item is None or item.state is not ItemState.IN_FLIGHT:
            return None
        self._end_inflight(item, now)
        self._band_of(item).queue.settle(item, usage)
        prio = self.evictor.demand_of(request_id) if item.evicted else None
        if prio is None:
            return None
        demand = self._by_priority.get(prio)
        waiting = demand is not None and demand.queued > 0
        return self.evictor.confirm(request_id, now, demand_waiting=waiting)

    def on_cancelled(self, request_id: str, now: float) -> Finalized | None:
        """The client went away. A queued request is removed at once (its capacity freed) and
        finalized EvictedContextCancelled; an in-flight one is treated as finished."""
        item = self._items.get(request_id)
        if item is None:
            return None
        if item.state is ItemState.QUEUED:
            return self._finish_queued(item, Outcome.EVICTED_CONTEXT_CANCELLED, now)
        self.on_finished(request_id, now)
        return None

    def shutdown(self, now: float) -> list[Finalized]:
        """Stop accepting; finalize every queued request EvictedOther (503 shutting down)."""
        self._closed = True
        queued = [i for i in self._items.values() if i.state is ItemState.QUEUED]
        return [self._finish_queued(i, Outcome.EVICTED_OTHER, now) for i in queued]

    def set_priorities(self, priorities: Iterable[int]) -> None:
        """The priorities of all objectives (desired bands): provision the missing ones,
        drop idle bands that are neither static nor desired."""
        self._desired = frozenset(priorities)
        for prio in self._desired - self._by_priority.keys():
            self._by_priority[prio] = Band(self.settings.template_for(prio), static=False)
        for band in list(self._by_priority.values()):
            if not band.static and band.priority not in self._desired and band.idle:
                del self._by_priority[band.priority]
        self._bands = [self._by_priority[p] for p in sorted(self._by_priority, reverse=True)]

    def next_deadline(self) -> float | None:
        """The earliest time a cycle could change something without any event, or None."""
        pair = (self._expiry.next_deadline(), self.evictor.next_deadline())
        times = [t for t in pair if t is not None]
        return min(times, default=None)

    # ---- internals -------------------------------------------------------------------
    def _fits(self, band: Band, size: int) -> bool:
        s, t = self.settings, self.totals
        if s.max_bytes > 0 and t.bytes + size > s.max_bytes:
            return False
        if s.max_requests > 0 and t.queued + 1 > s.max_requests:
            return False
        return band.fits(size)

    def effective_ttl(self, request: Request) -> float:
        """The queue budget ``request`` gets (0: no expiry): its TTL may only shorten the
        configured one."""
        default, asked = self.settings.default_ttl, request.ttl
        if asked is None or asked <= 0:
            return default
        return asked if default <= 0 else min(default, asked)

    def _enqueue(self, request: Request, band: Band, now: float) -> None:
        flow = band.flow(request.fairness_id, now)
        item = Item(
            request,
            flow,
            band=band.priority,
            enqueue_time=now,
            ttl=self.effective_ttl(request),
            seq=next(self._seq),
        )
        item.key = band.settings.ordering.key(item)
        size = request.byte_size
        flow.queued += 1
        flow.bytes += size
        band.queued += 1
        band.bytes += size
        self.totals.queued += 1
        self.totals.bytes += size
        self._items[request.request_id] = item
        band.queue.push(item)
        self._expiry.track(item)

    def _dispatch_loop(
        self,
        now: float,
        capacity: CapacityView,
        ceilings: Sequence[float],
        out: list[Finalized],
        limit: int | None,
    ) -> tuple[float, int | None]:
        sat = capacity.saturation
        most = sys.maxsize if limit is None else limit
        while len(out) < most:
            item, stop = self._pick(sat, ceilings)
            if item is None:
                return sat, stop
            out.append(self._dispatch(item, now))
            sat += capacity.cost(item.request.tokens)
        return sat, None

    def _pick(self, sat: float, ceilings: Sequence[float]) -> tuple[Item | None, int | None]:
        """Strict bands: the first band whose ceiling is reached stops the cycle, even when
        empty (upstream's head-of-line rule; with non-increasing ceilings it is the same as
        stopping at the first gated band with work)."""
        for i, band in enumerate(self._bands):
            if sat >= ceilings[i] - GATE_EPS:
                return None, i
            if band.queued:
                item = band.queue.pop()
                if item is not None:
                    return item, None
        return None, None

    def _dispatch(self, item: Item, now: float) -> Finalized:
        item.state = ItemState.IN_FLIGHT
        item.dispatch_time = now
        self._unqueue_counters(item)
        item.flow.inflight += 1
        band = self._band_of(item)
        band.inflight += 1
        band.charge += item.charged
        self.totals.inflight += 1
        if self.settings.eviction.enabled:
            self.evictor.track(item)
        return self._record(item, Outcome.DISPATCHED, now)

    def _finish_queued(self, item: Item, outcome: Outcome, now: float) -> Finalized:
        item.state = ItemState.DONE
        self._unqueue_counters(item)
        del self._items[item.request.request_id]
        self._band_of(item).queue.discard(item)
        if item.flow.idle:
            item.flow.idle_since = now
        return self._record(item, outcome, now)

    def _end_inflight(self, item: Item, now: float) -> None:
        item.state = ItemState.DONE
        del self._items[item.request.request_id]
        item.flow.inflight -= 1
        band = self._band_of(item)
        band.inflight -= 1
        band.charge = band.charge - item.charged if band.inflight else 0.0
        self.totals.inflight -= 1
        if item.flow.idle:
            item.flow.idle_since = now

    def _unqueue_counters(self, item: Item) -> None:
        size = item.request.byte_size
        band = self._band_of(item)
        item.flow.queued -= 1
        item.flow.bytes -= size
        band.queued -= 1
        band.bytes -= size
        self.totals.queued -= 1
        self.totals.bytes -= size

    def _band_of(self, item: Item) -> Band:
        return self._by_priority[item.band]

    def _record(self, item: Item, outcome: Outcome, now: float) -> Finalized:
        req = item.request
        return Finalized(
            req.request_id,
            outcome,
            req.fairness_id,
            req.priority,
            item.band,
            now - item.enqueue_time,
            pool_empty=self.pool_empty,
            shutting_down=self._closed and outcome is Outcome.EVICTED_OTHER,
        )

    def _rejected(self, request: Request, band: Band, now: float, outcome: Outcome) -> Finalized:
        return Finalized(
            request.request_id,
            outcome,
            request.fairness_id,
            request.priority,
            band.priority,
            0.0,
            pool_empty=self.pool_empty,
            shutting_down=self._closed,
        )

    def _expiry_outcome(self) -> Outcome:
        return Outcome.EVICTED_NO_ENDPOINTS if self.pool_empty else Outcome.EVICTED_TTL

    def _evictions(self, now: float, stop: int, sat: float, ceilings: Sequence[float]) -> list[str]:
        if not self.settings.eviction.enabled or not self.evictor.gate_open():
            return []
        victim = self.evictor.lowest_victim()
        if victim is None:
            return []
        for j in range(stop, len(self._bands)):
            band, ceiling = self._bands[j], ceilings[j]
            if band.priority <= victim:
                break
            if ceiling <= 0 or sat < ceiling - GATE_EPS or not band.queued:
                continue
            chosen = self.evictor.choose(now, sat, ceiling, band.priority, self.totals.inflight)
            return [i.request.request_id for i in chosen]
        return []

    def _maybe_collect(self, now: float) -> None:
        if now < self._next_gc:
            return
        self._next_gc = now + self.settings.flow_gc_timeout
        for band in self._bands:
            band.collect(now, self.settings.flow_gc_timeout)
        self.set_priorities(self._desired)
