"""The processor: wires settings, broker, gates, pools, ingest, workers and background tasks.

``Processor`` runs inside any event loop (tests, the demo, ``sluiceway processor``)::

    async with Processor(settings, broker, clock=clock) as processor:
        ...                      # requests flow
    # leaving the block drains: stop pulling, finish in flight, release the rest

Drain (SIGTERM): readiness goes false; ingest stops; buffered and parked requests go back to
their queues at once; in-flight requests get ``drain_timeout`` (scaled seconds) to finish;
what is still in flight then is aborted and returned to its queue with its retry count
unchanged.

With a ``membership`` (Redis brokers) the processor joins each pool's replica set and its gates
split pool-wide in-flight targets with the other live processors (``gates/pool_share.py``).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import TracebackType

from prometheus_client import CollectorRegistry

from sluiceway.broker.base import Broker
from sluiceway.clock import Clock, RealClock
from sluiceway.errors import ConfigError
from sluiceway.gates.aimd import WINDOWS_SERVICE, SharedWindows
from sluiceway.gates.base import Gate
from sluiceway.gates.context import GAUGES_SERVICE, SIGNALS_SERVICE, GateContext, memory_stores
from sluiceway.gates.factory import build_gate
from sluiceway.gates.quota_store import QuotaStore
from sluiceway.ledger.membership import ReplicaMembership
from sluiceway.processor.ingest import QueueIngest
from sluiceway.processor.maintenance import start_maintenance, stop_tasks
from sluiceway.processor.metrics import ProcessorMetrics, QueueLabels
from sluiceway.processor.mixed_fleet import warn_about_foreign_claims
from sluiceway.processor.ready_buffer import ReadyBuffer
from sluiceway.processor.recorder import Recorder
from sluiceway.processor.reload import ReloadPlan, plan_reload
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.specs import ProcessorSpec, QueueSpec
from sluiceway.processor.upstream import Upstream
from sluiceway.processor.worker import Worker
from sluiceway.signals.refresher import SignalHub

__all__ = ["Processor"]

log = logging.getLogger(__name__)


def _warn_shared_ttl(queue: QueueSpec, default_route: str) -> None:
    """An expiry on a list many requests share expires them all: say so at start-up."""
    if queue.result_ttl_seconds is not None:
        shared = queue.result_queue_name or default_route
        log.warning(
            "queue %s: result_ttl_seconds expires the whole result list (%s unless a request "
            "names its own route), not single results",
            queue.queue_name,
            shared,
        )


class Processor:
    """One async processor over one broker."""

    def __init__(
        self,
        settings: ProcessorSpec,
        broker: Broker,
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        quota_store: Callable[[str], QuotaStore] | None = None,
        services: Mapping[str, object] | None = None,
        rng: random.Random | None = None,
        membership: ReplicaMembership | None = None,
    ) -> None:
        if not settings.queues:
            log.warning("the processor has no queues configured")
        self.settings = settings
        self.metrics = ProcessorMetrics(registry)
        self.rt = Runtime(
            broker=broker,
            clock=clock or RealClock(),
            settings=settings,
            metrics=self.metrics,
            rng=rng or random.Random(),
        )
        self._quota_store = quota_store or memory_stores()
        self._signals = SignalHub(self.rt.clock, settings.prometheus)
        # windows of its own: two processors in one process (a benchmark, a test) are two
        # members of the pool, each with its window, as two processes would be
        self._services = {
            SIGNALS_SERVICE: self._signals,
            GAUGES_SERVICE: self.metrics,
            WINDOWS_SERVICE: SharedWindows(),
        }
        self._services.update(services or {})
        self.pools: dict[str, ReadyBuffer] = {}
        self.ingests: list[QueueIngest] = []
        self._gates: list[Gate] = []
        self._upstream = Upstream(self.rt.clock, connections=sum(p.workers for p in settings.pools))
        self._workers: list[asyncio.Task[None]] = []
        self._ingest_tasks: dict[str, asyncio.Task[None]] = {}
        self._background: list[asyncio.Task[None]] = []
        self._ready = False
        self._stopped = asyncio.Event()
        self._forced = asyncio.Event()
        self.membership = membership
        if membership is not None:
            self.rt.shares = membership.share
            membership.on_change = self._share_changed
        self._build_pools()
        self._build_ingests()

    @property
    def ready(self) -> bool:
        """True between a completed start and the beginning of a drain."""
        return self._ready

    @property
    def broker(self) -> Broker:
        return self.rt.broker

    def queue_gates(self) -> list[Gate]:
        """The queue gates, in queue order (queues without a gate are left out)."""
        return [ingest.gate for ingest in self.ingests if ingest.gate is not None]

    # -- building -------------------------------------------------------------------------

    def _context(self, workers: int, labels: QueueLabels, wake: Callable[[], None]) -> GateContext:
        return GateContext(
            clock=self.rt.clock,
            workers=workers,
            quota_store=self._quota_store,
            services=self._services,
            wake=wake,
            share=lambda: self.rt.shares(labels.pool_name),
            labels={
                "queue_id": labels.queue_id,
                "queue_name": labels.queue_name,
                "pool_name": labels.pool_name,
            },
        )

    def _gate(
        self,
        gate_type: str,
        params: object,
        workers: int,
        labels: QueueLabels,
        where: str,
        wake: Callable[[], None],
    ) -> Gate | None:
        ctx = self._context(workers, labels, wake)
        gate = build_gate(gate_type, params, ctx, field=where)
        if gate is not None:
            self._gates.append(gate)
        return gate

    def _build_pools(self) -> None:
        merge = self.settings.merge
        for index, spec in enumerate(self.settings.pools):
            queues = sum(1 for q in self.settings.queues if q.pool_id == spec.id)
            labels = QueueLabels.of_pool(spec.id)
            gate = self._gate(
                spec.gate_type,
                spec.gate_params,
                spec.workers,
                labels,
                f"pools.{index}.gate_params",
                self._pool_waker(spec.id),  # a signal change re-tries the parked workers' gates
            )
            self.pools[spec.id] = ReadyBuffer(
                spec,
                ordering=merge.ordering,
                queues=queues,
                gate=gate,
                buffer_per_queue=self.settings.buffer_per_queue,
                on_room=self.rt.wake.room_in_buffer,
            )
            self.metrics.pool_configured(spec.id, spec.workers)
            if self.membership is not None:
                self.membership.join(spec.id, self._in_flight(spec.id))

    def _in_flight(self, pool_id: str) -> Callable[[], int]:
        return lambda: self.pools[pool_id].dispatching

    def _share_changed(self, pool_id: str) -> None:
        """A new share may admit more: parked workers and held queues try again."""
        self._pool_waker(pool_id)()
        self.rt.wake.gate_may_admit()

    def _pool_waker(self, pool_id: str) -> Callable[[], None]:
        def wake() -> None:
            pool = self.pools.get(pool_id)
            if pool is not None:
                pool.capacity_changed.fire()

        return wake

    def _build_ingests(self) -> None:
        for index, queue in enumerate(self.settings.queues):
            self.ingests.append(self._make_ingest(queue, f"queues.{index}"))

    def _make_ingest(self, queue: QueueSpec, where: str) -> QueueIngest:
        pool = self.pools.get(queue.pool_id)
        if pool is None:
            raise ConfigError(f"unknown pool {queue.pool_id!r}", field=f"{where}.worker_pool_id")
        labels = QueueLabels(queue.id, queue.queue_name, queue.pool_id)
        self.metrics.prepare(labels)
        _warn_shared_ttl(queue, self.settings.result_queue_name)
        gate = self._gate(
            queue.gate_type,
            queue.gate_params,
            pool.spec.workers,
            labels,
            f"{where}.gate_params",
            self.rt.wake.gate_may_admit,
        )
        return QueueIngest(self.rt, queue, pool, gate)

    def _start_ingest(self, ingest: QueueIngest) -> None:
        task = asyncio.create_task(ingest.run(), name=f"ingest-{ingest.labels.queue_name}")
        self._ingest_tasks[ingest.queue.id] = task

    async def reconfigure(self, queues: Sequence[QueueSpec]) -> ReloadPlan:
        """Switch to ``queues`` (hot reload): unchanged queues keep running; removed ones stop
        and give their buffered requests back; new ones start. In flight work finishes."""
        plan = plan_reload(self.settings.queues, queues)
        added = [self._make_ingest(q, f"queues[{q.id}]") for q in plan.add]  # may raise
        for ingest in [i for i in self.ingests if i.queue.id in plan.remove]:
            await self._retire(ingest)
        self.ingests = [i for i in self.ingests if i.queue.id not in plan.remove] + added
        self.settings = self.rt.settings = replace(self.settings, queues=tuple(queues))
        for pool in self.pools.values():
            pool.resize(sum(1 for q in queues if q.pool_id == pool.spec.id))
        for ingest in added:
            if self._ready:
                self._start_ingest(ingest)
        return plan

    async def _retire(self, ingest: QueueIngest) -> None:
        ingest.stop()
        self.rt.wake.queues_changed()
        task = self._ingest_tasks.pop(ingest.queue.id, None)
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        recorder = Recorder(self.rt)
        for item in self.pools[ingest.queue.pool_id].remove_queue(ingest.queue.queue_name):
            self.metrics.unbuffered(item.labels)
            await recorder.release(item)
        if ingest.gate is not None:
            if ingest.gate in self._gates:
                self._gates.remove(ingest.gate)
            await ingest.gate.aclose()

    # -- running --------------------------------------------------------------------------

    async def start(self) -> None:
        """Start ingest, workers and background tasks (gates and pools exist already)."""
        await self._upstream.start()
        if self.membership is not None:  # the shares are known before the first admission
            await self.membership.sync_once()
            self.membership.start()
        await warn_about_foreign_claims(self.broker, [q.queue_name for q in self.settings.queues])
        # One ingest pass before any worker runs, so the first dispatch already sees every
        # queue's head in lane order.
        await asyncio.gather(*(ingest.poll_once() for ingest in self.ingests))
        for pool in self.pools.values():
            for n in range(pool.spec.workers):
                worker = Worker(self.rt, pool, self._upstream)
                self._workers.append(
                    asyncio.create_task(worker.run(), name=f"worker-{pool.spec.id}-{n}")
                )
        for ingest in self.ingests:
            self._start_ingest(ingest)
        self._background = start_maintenance(
            self.rt, lambda: [ingest.labels for ingest in self.ingests]
        )
        self._ready = True
        log.info("processor started: %d queues, %d pools", len(self.ingests), len(self.pools))

    async def stop(self, *, drain_timeout: float | None = None) -> None:
        """Drain (see the module docstring); ``drain_timeout`` in scaled seconds."""
        if self._stopped.is_set():
            return
        self._ready = False
        self.rt.stopping = True
        self.rt.wake.queues_changed()
        await asyncio.gather(*self._ingest_tasks.values(), return_exceptions=True)
        buffered = await self._release_buffered()
        in_flight = len(self.rt.book)
        log.info(
            "draining: %d in flight, %d buffered returned to their queues", in_flight, buffered
        )
        aborted = await self._finish_in_flight(
            self.settings.drain_timeout if drain_timeout is None else drain_timeout
        )
        log.info(
            "drained: %d finished, %d returned to their queues (%d buffered, %d aborted)",
            in_flight - aborted, buffered + aborted, buffered, aborted,
        )  # fmt: skip
        await stop_tasks(self._background)
        if self.membership is not None:
            await self.membership.close()
        await self._upstream.aclose()
        for gate in self._gates:
            await gate.aclose()
        await self._signals.aclose()
        self._stopped.set()
        log.info("processor stopped")

    async def _release_buffered(self) -> int:
        recorder = Recorder(self.rt)
        released = 0
        for pool in self.pools.values():
            for item in await pool.close():
                self.metrics.unbuffered(item.labels)
                await recorder.release(item)
                released += 1
        return released

    def force_stop(self) -> None:
        """End a drain now (a second SIGTERM / SIGINT): in-flight calls are aborted and their
        entries returned to their queues with the retry count unchanged."""
        self._forced.set()

    async def _finish_in_flight(self, drain_timeout: float) -> int:
        """Wait for in-flight work; returns how many requests were aborted and returned."""
        if not self._workers:
            return 0
        finished = asyncio.ensure_future(asyncio.wait(self._workers))
        forced = asyncio.ensure_future(self._forced.wait())
        try:
            await asyncio.wait(
                {finished, forced},
                timeout=self.rt.wall(drain_timeout),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            for waiter in (finished, forced):
                waiter.cancel()
        pending = [task for task in self._workers if not task.done()]
        if not pending:
            return 0
        aborted = len(self.rt.book)
        why = "forced stop" if self._forced.is_set() else "drain timeout"
        log.warning("%s: returning %d in-flight requests to their queues", why, aborted)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return aborted

    async def wait_idle(self) -> None:
        """Return once there is nothing left to do now: every running ingest has read its
        queue after this call and admitted nothing, and no request is buffered, parked or in
        flight. Retries that are not due yet are not waited for.

        The explicit "drain until idle" step (as arq's burst mode): a test that expects
        nothing to happen calls it, then checks the broker's state.
        """
        while not self.rt.stopping and (await self._fresh_polls() > 0 or len(self.rt.book) > 0):
            await self._until_no_claims()

    async def _fresh_polls(self) -> int:
        """Wake every running ingest and wait for a poll that started after this call;
        returns how many entries those polls admitted."""
        running = [i for i in self.ingests if i.queue.id in self._ingest_tasks]
        marks = [(i, i.polls_started + 1, i.admitted_total) for i in running]
        self.rt.wake.queues_changed()
        admitted = 0
        for ingest, target, before in marks:
            while ingest.polls_done < target and not self.rt.stopping:
                await ingest.polled.wait(since=ingest.polled.generation)
            admitted += ingest.admitted_total - before
        return admitted

    async def _until_no_claims(self) -> None:
        while len(self.rt.book) > 0:
            await self.rt.wake.claims.wait(since=self.rt.wake.claims.generation)

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def __aenter__(self) -> Processor:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
