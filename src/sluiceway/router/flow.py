"""Admission for the router: flow control (or legacy shedding) and the endpoint at dispatch.

:class:`RouterFlow` owns the :class:`FlowAdapter` and applies what each cycle decides:

* :meth:`RouterFlow.kick` runs a cycle against the capacity view the endpoint pool gives
  through the configured detector, on every arrival, completion and capacity change, and when
  a flow-control deadline is due;
* every request a cycle dispatches gets its endpoint inside that cycle, so the in-flight counts
  the next cycle reads are never behind the controller;
* the evictions a cycle decides interrupt those exchanges;
* outcome, queue and cycle metrics are recorded here;
* every dispatch feeds the drain rate behind the ``Retry-After`` of 429 and 503 answers
  (:meth:`RouterFlow.advised`, :mod:`sluiceway.router.retry_after`);
* with a pool ledger (several replicas, ``--ledger``), each cycle's view adds the requests the
  other replicas hold (:mod:`sluiceway.ledger.share`) and every dispatched request goes upstream
  only once the ledger granted its lease, so the replicas together never admit more than the
  pool holds (docs/flow-control.md).

:meth:`RouterFlow.admit` returns None when the request may go upstream (``ex.member`` set), or
the answer to send instead; either way a request flow control took records its band, time
queued and queue budget on the exchange. :meth:`RouterFlow.finish` releases the endpoint and
tells flow control the stream ended (capacity freed, an eviction confirmed).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from sluiceway.clock import Clock
from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.adapter import FlowAdapter
from sluiceway.flowcontrol.base import CapacityView, Finalized, Outcome, Request
from sluiceway.flowcontrol.configure import RouterFlowControl
from sluiceway.flowcontrol.controller import Cycle, FlowController
from sluiceway.flowcontrol.legacy import legacy_admit
from sluiceway.flowcontrol.saturation import UtilizationDetector, staged_view
from sluiceway.ledger.leases import LedgerSettings
from sluiceway.router.exchange import Exchange
from sluiceway.router.identity import Identity
from sluiceway.router.metrics import RouterMetrics
from sluiceway.router.outcomes import (
    error_answer,
    evicted_answer,
    finalized_answer,
    ttl_expired,
)
from sluiceway.router.pool import EndpointPool
from sluiceway.router.pool_ledger import PoolLedger
from sluiceway.router.request_facts import RequestFacts
from sluiceway.router.retry_after import RetryAfter
from sluiceway.wire import headers as h
from sluiceway.wire.answer import Answer

__all__ = ["RouterFlow"]

Labels = tuple[str, str, str, str, str]
# Answers a client may try again later; they carry Retry-After.
_RETRY_STATUSES = frozenset({429, 503})
# Outcomes of requests refused at the door: never queued.
_REFUSED = frozenset(
    {Outcome.REJECTED_CAPACITY, Outcome.REJECTED_NO_ENDPOINTS, Outcome.REJECTED_OTHER}
)


def _no_endpoints() -> Answer:
    return error_answer(503, "no model server endpoints available", h.REASON_NO_ENDPOINTS)


class RouterFlow:
    def __init__(
        self,
        flow: RouterFlowControl,
        clock: Clock,
        pool: EndpointPool,
        metrics: RouterMetrics,
        live: dict[str, Exchange],
        ledger: LedgerSettings | None = None,
    ) -> None:
        self.flow = flow
        self.ledger: PoolLedger | None = None
        self.clock = clock
        self.pool = pool
        self.metrics = metrics
        self._live = live
        self.adapter: FlowAdapter | None = None
        self.retry = RetryAfter(clock)
        if flow.enabled:
            self.adapter = FlowAdapter(FlowController(flow.settings), clock)
        self._deadlines: asyncio.Task[None] | None = None
        metrics.watch(lambda: self.controller, self._stale_endpoints, self._saturation_stages)
        if ledger is not None:
            if flow.detector is None or self.adapter is None:
                raise ConfigError(
                    "the ledger shares the saturation detector's capacity: turn flow control "
                    "on with a saturation detector",
                    field="--ledger",
                )
            self.ledger = PoolLedger(
                ledger,
                metrics.pool,
                clock,
                self.adapter.controller,
                kick=self.kick,
                evict=self._evict,
                registry=metrics.registry,
            )

    @property
    def controller(self) -> FlowController | None:
        return None if self.adapter is None else self.adapter.controller

    def kick(self) -> None:
        """Run one dispatch cycle and apply its decision: endpoints, evictions, metrics."""
        adapter = self.adapter
        if adapter is None:
            return
        started = time.perf_counter()
        cycle = adapter.cycle(self._capacity())
        self._apply(cycle)
        if self.ledger is not None:
            self.ledger.after(cycle)
        self.metrics.cycle(time.perf_counter() - started)

    def set_priorities(self, priorities: frozenset[int]) -> None:
        """The objectives changed: provision their bands."""
        if self.adapter is not None:
            self.adapter.controller.set_priorities(priorities)
            self.kick()

    def start(self) -> None:
        """Run cycles when flow-control deadlines are due, and a first one now."""
        if self.ledger is not None:
            self.ledger.leases.start()
        adapter = self.adapter
        if adapter is not None and self._deadlines is None:
            self._deadlines = asyncio.get_running_loop().create_task(self._run_deadlines(adapter))
            self.kick()

    async def close(self) -> None:
        """Stop the deadline task; every queued request is answered 503 (shutting down)."""
        if self._deadlines is not None:
            self._deadlines.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._deadlines
            self._deadlines = None
        if self.adapter is not None:
            self.adapter.close()
        if self.ledger is not None:
            await self.ledger.leases.close()

    # ---- admission -----------------------------------------------------------------------
    async def admit(
        self, ex: Exchange, facts: RequestFacts, ident: Identity, priority: int, size: int
    ) -> Answer | None:
        """None when ``ex`` may go upstream (``ex.member`` set), else the answer to send."""
        if self.adapter is None:
            return self._legacy(ex, priority)
        request = Request(
            ex.request_id,
            ident.fairness_id,
            priority,
            size,
            received_at=self.clock.now(),
            ttl=ident.ttl,
            slo_ttft_ms=ident.slo_ttft_ms,
            prompt_tokens=facts.prompt_tokens,
            max_tokens=facts.max_tokens,
        )
        labels = (
            self.metrics.fairness_label(ident.fairness_id),
            str(priority),
            self.metrics.pool,
            facts.model,
            facts.model,
        )
        self.metrics.queued(labels, size, 1)
        try:
            return await self._wait(self.adapter, ex, request, labels)
        finally:
            self.metrics.queued(labels, size, -1)

    def finish(self, ex: Exchange) -> None:
        """The upstream call ended (any way): free the endpoint and flow-control capacity."""
        if ex.member is not None:
            self.pool.release(ex.member, ex.tokens)
            ex.member = None
        self._release_lease(ex)
        if self.adapter is None:
            return
        rev = self.adapter.finished(ex.request_id, ex.usage)
        self.kick()
        if rev is not None and rev.latency is not None:
            self.metrics.revocation_confirmed(rev.latency)

    def advised(self, answer: Answer, ex: Exchange | None = None) -> Answer:
        """``answer`` with ``Retry-After`` when it is a 429 or 503: the queue ahead of ``ex``'s
        band (every band without ``ex``) over the drain rate, within half its budget left."""
        if answer.status not in _RETRY_STATUSES:
            return answer
        remaining = None
        if ex is not None and ex.budget is not None:
            remaining = ex.budget - (ex.waited or 0.0)
        seconds = self.retry.seconds(self._ahead(None if ex is None else ex.band), remaining)
        return answer.with_headers((h.RETRY_AFTER, str(seconds)))

    def _ahead(self, band: int | None) -> int:
        """Requests queued in ``band`` and the bands above it (None: in every band)."""
        controller = self.controller
        if controller is None:
            return 0
        if band is None:
            return controller.totals.queued
        return sum(b.queued for b in controller.bands if b.priority >= band)

    def _legacy(self, ex: Exchange, priority: int) -> Answer | None:
        detector, now = self.flow.detector, self.clock.now()
        saturation = None
        if detector is not None:
            saturation = staged_view(detector, self.pool.snapshots(now), now).saturation
        verdict = legacy_admit(priority, saturation)
        if not verdict.admitted:
            return self.advised(error_answer(verdict.status or 429, verdict.message), ex)
        member = self.pool.pick(ex.prefix, ex.model)
        if member is None:
            return self.advised(_no_endpoints(), ex)
        self.pool.acquire(member, ex.tokens)
        ex.member, ex.dispatched_at = member, time.perf_counter()
        self.retry.dispatched(1)
        return None

    async def _wait(
        self, adapter: FlowAdapter, ex: Exchange, request: Request, labels: Labels
    ) -> Answer | None:
        started = time.perf_counter()
        outcome = adapter.enqueue(request)
        done: Finalized | None = None
        try:
            if not outcome.done():
                self.kick()
            with ex.interruptible():
                done = await adapter.wait(request.request_id, outcome)
        finally:
            if done is None:  # cut short: flow control was told, capacity may have freed
                self.kick()
        if done is None:
            return self.advised(self._interrupted(ex, labels), ex)
        ttl = adapter.controller.effective_ttl(request)
        ex.band, ex.budget = done.band, (ttl if ttl > 0 else None)
        ex.waited = None if done.outcome in _REFUSED else done.waited
        queued = done.outcome is Outcome.DISPATCHED or done.waited > 0
        step = "NotYetFinalized" if queued else done.outcome.value
        self.metrics.enqueue(labels[0], labels[1], step, time.perf_counter() - started)
        self.metrics.finished(labels, done.outcome.value, done.waited)
        if done.outcome is not Outcome.DISPATCHED:
            return self.advised(finalized_answer(done), ex)
        if ex.member is None:  # the pool emptied between the cycle and now
            adapter.finished(ex.request_id)
            self.kick()
            return self.advised(_no_endpoints(), ex)
        return await self._leased(adapter, ex)

    async def _leased(self, adapter: FlowAdapter, ex: Exchange) -> Answer | None:
        """Wait for the ledger's lease (at once without a ledger or with one granted); a
        request cut short meanwhile ends here, as a dispatched one that never went upstream.
        The wait is queueing: it counts in the request's queue time, and a request whose queue
        budget runs out first is answered as one that expired in the queue (429
        ``rejected-ttl-expired``), not sent too late to finish."""
        lease = ex.lease
        if lease is None or lease.done():
            return None
        since = self.clock.now()
        left = None if ex.budget is None else max(0.0, ex.budget - (ex.waited or 0.0))
        with ex.interruptible(), contextlib.suppress(TimeoutError):
            async with asyncio.timeout(None if left is None else self.clock.to_wall(left)):
                await asyncio.shield(lease)
        if ex.waited is not None:
            ex.waited += self.clock.now() - since
        if lease.done() and not lease.cancelled():
            return None
        self.finish(ex)
        if ex.evicted:
            return evicted_answer()
        if not ex.interrupted:
            return ttl_expired()
        return error_answer(503, "client disconnected while queued", h.REASON_CONTEXT_CANCELLED)

    def _release_lease(self, ex: Exchange) -> None:
        lease, ex.lease = ex.lease, None
        if lease is None or self.ledger is None:
            return
        if lease.done() and not lease.cancelled():
            self.ledger.leases.release(ex.band)
        else:
            lease.cancel()

    def _interrupted(self, ex: Exchange, labels: Labels) -> Answer:
        """The client left, or the request was evicted between its dispatch and its handler's
        next step; the adapter has already told flow control."""
        if ex.member is not None:
            self.pool.release(ex.member, ex.tokens)
            ex.member = None
        self._release_lease(ex)
        if ex.evicted:
            self.metrics.finished(labels, Outcome.DISPATCHED.value, 0.0)
            return evicted_answer()
        self.metrics.finished(labels, Outcome.EVICTED_CONTEXT_CANCELLED.value, 0.0)
        return error_answer(503, "client disconnected while queued", h.REASON_CONTEXT_CANCELLED)

    # ---- one cycle -----------------------------------------------------------------------
    def _capacity(self) -> CapacityView:
        now = self.clock.now()
        detector = self.flow.detector
        snaps = self.pool.snapshots(now)
        if detector is None:
            return CapacityView(0.0, pool_empty=not snaps)
        view = staged_view(detector, snaps, now)
        if self.ledger is None:
            return view
        own = sum(m.inflight for m in self.pool.members.values())
        return self.ledger.view(view, own, snaps, now)

    def _apply(self, cycle: Cycle) -> None:
        for done in cycle.dispatched:
            self._assign(done)
        self.retry.dispatched(len(cycle.dispatched))
        if cycle.dispatched and self.flow.detector is not None:
            self.flow.detector.note_dispatched(len(cycle.dispatched))
        for request_id in cycle.evict:
            self._evict(request_id)

    async def _run_deadlines(self, adapter: FlowAdapter) -> None:
        while True:
            await adapter.until_due()
            self.kick()

    def _assign(self, done: Finalized) -> None:
        ex = self._live.get(done.request_id)
        if ex is None:
            return
        member = self.pool.pick(ex.prefix, ex.model)
        if member is not None:
            self.pool.acquire(member, ex.tokens)
            ex.member, ex.dispatched_at = member, time.perf_counter()
            if self.ledger is not None:
                ex.band = done.band  # the lease's band, also when cut before its handler runs
                ex.lease = self.ledger.leases.acquire(done.band)

    def _evict(self, request_id: str) -> None:
        controller = self.controller
        demand = None if controller is None else controller.evictor.demand_of(request_id)
        if demand is not None:
            self.metrics.revocation_issued(demand)
        ex = self._live.get(request_id)
        if ex is not None:
            ex.interrupt(evicted=True)

    def _saturation_stages(self) -> tuple[tuple[str, float], ...]:
        """The pool's saturation per stage now, for the scrape-time gauge (0 without a
        detector: such a router never holds anything back)."""
        detector = self.flow.detector
        if detector is None:
            return (("effective", 0.0),)
        now = self.clock.now()
        view = staged_view(detector, self.pool.snapshots(now), now)
        return view.stages or (("effective", view.saturation),)

    def _stale_endpoints(self) -> int:
        detector = self.flow.detector
        return detector.stale_endpoints if isinstance(detector, UtilizationDetector) else 0
