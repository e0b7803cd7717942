"""The router's request path: admit through flow control, pick an endpoint, proxy, finish.

One :class:`Gateway` per process. ``completions`` handles ``POST /v1/completions`` and
``/v1/chat/completions`` as a raw ASGI callable:

1. read the body and headers (untrusted callers lose their identity headers);
2. flow control on: ``enqueue_and_wait``; a drop is answered with its status and reason.
   Flow control off: legacy admission (sheddable requests refused while saturated);
3. the endpoint is chosen at dispatch, inside the dispatch cycle, so the in-flight counts the
   detector reads are never behind the controller's;
4. the upstream answer is relayed as it arrives; at the end the endpoint is released and flow
   control told (``finished`` with the captured usage), which frees capacity and confirms an
   eviction.

Eviction cancels the handler task: before the first byte the client gets 429 ``evicted``;
once streaming, a terminal SSE error event of type ``evicted`` instead of ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiohttp

from sluiceway.clock import Clock
from sluiceway.flowcontrol.adapter import FlowAdapter
from sluiceway.flowcontrol.base import CapacityView, Finalized, Outcome, Request
from sluiceway.flowcontrol.configure import RouterFlowControl
from sluiceway.flowcontrol.controller import Cycle, FlowController
from sluiceway.flowcontrol.legacy import legacy_admit
from sluiceway.flowcontrol.saturation import UtilizationDetector, staged_view
from sluiceway.router.exchange import Exchange
from sluiceway.router.identity import BadRequest, RequestFacts, header_map, read_body, read_identity
from sluiceway.router.metrics import RouterMetrics
from sluiceway.router.objectives import ObjectiveTable
from sluiceway.router.outcomes import (
    error_answer,
    evicted_answer,
    finalized_answer,
    shutting_down,
)
from sluiceway.router.pool import EndpointPool, PoolMember
from sluiceway.router.proxy import Send, forward_headers, relay, send_answer
from sluiceway.router.settings import RouterSettings
from sluiceway.router.sse import EVICTED_EVENT
from sluiceway.router.trust import HeaderTrust
from sluiceway.wire import headers as h

__all__ = ["TRUSTED_SCOPE_KEY", "Gateway"]

log = logging.getLogger(__name__)

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Labels = tuple[str, str, str, str, str]
# Set on an ASGI scope by an in-process caller (the coordinator's passthrough) whose identity
# headers are trusted whatever the trusted-sources settings say.
TRUSTED_SCOPE_KEY = "sluiceway.trusted"


async def _read_all(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise ConnectionResetError("client went away while sending the body")
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body", False):
            return b"".join(chunks)


async def _watch_disconnect(receive: Receive, ex: Exchange) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            ex.interrupt()
            return


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


class Gateway:
    def __init__(
        self,
        settings: RouterSettings,
        flow: RouterFlowControl,
        clock: Clock,
        *,
        objectives: ObjectiveTable | None = None,
        trust: HeaderTrust | None = None,
        pool: EndpointPool | None = None,
        metrics: RouterMetrics | None = None,
    ) -> None:
        self.settings = settings
        self.flow = flow
        self.clock = clock
        self.trust = trust or HeaderTrust()
        self.metrics = metrics or RouterMetrics(settings.pool_label)
        self.pool = pool or EndpointPool(settings.endpoints, clock)
        self.adapter: FlowAdapter | None = None
        if flow.enabled:
            controller = FlowController(flow.settings)
            self.adapter = FlowAdapter(
                controller, clock, self._capacity, on_evict=self._evict, on_cycle=self._cycled
            )
        self.objectives = objectives or ObjectiveTable()
        self.objectives.on_change = self._priorities_changed
        self.pool.on_change = self.kick
        self._priorities_changed(frozenset(self.objectives.names().values()))
        self.metrics.watch(lambda: self.controller, self._stale_endpoints)
        self.live: dict[str, Exchange] = {}
        self.draining = False
        self.started = False
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._health: asyncio.Task[None] | None = None
        self._cycle_started = 0.0
        self._stages: tuple[tuple[str, float], ...] = ()
        self._idle = asyncio.Event()
        self._idle.set()
        self._timeout = aiohttp.ClientTimeout(
            total=clock.to_wall(settings.upstream_timeout) if settings.upstream_timeout else None
        )

    # ---- lifecycle ---------------------------------------------------------------------
    @property
    def controller(self) -> FlowController | None:
        return None if self.adapter is None else self.adapter.controller

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("Gateway.start() was not called")
        return self._session

    async def start(self) -> None:
        """Open the upstream client, check every endpoint once, start the background tasks."""
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=90, enable_cleanup_closed=True)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        s = self.settings
        await self.pool.check_all(self._session, s.health_timeout)
        self._health = asyncio.get_running_loop().create_task(
            self.pool.run_checks(self._session, s.health_interval, s.health_timeout)
        )
        if self.adapter is not None:
            self.adapter.start()
            self.adapter.kick()
        self.started = True

    async def drain(self) -> None:
        """Stop taking requests; queued ones get 503 ``rejected-shutting-down``; running ones
        get ``drain_timeout`` to finish, then are cut."""
        self.draining = True
        if self.adapter is not None:
            await self.adapter.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                self._idle.wait(), self.clock.to_wall(self.settings.drain_timeout)
            )
        for ex in list(self.live.values()):
            ex.interrupt()

    async def aclose(self) -> None:
        if self._health is not None:
            self._health.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._health
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def ready(self) -> bool:
        return self.started and not self.draining

    def kick(self) -> None:
        """Capacity changed (an endpoint came or went, a scrape landed): run a cycle."""
        if self.adapter is not None:
            self.adapter.kick()

    # ---- flow-control callbacks --------------------------------------------------------
    def _capacity(self) -> CapacityView:
        self._cycle_started = time.perf_counter()
        now = self.clock.now()
        detector = self.flow.detector
        snaps = self.pool.snapshots(now)
        if detector is None:
            view = CapacityView(0.0, pool_empty=not snaps)
        else:
            view = staged_view(detector, snaps, now)
        self._stages = view.stages or (("effective", view.saturation),)
        return view

    def _cycled(self, cycle: Cycle) -> None:
        for done in cycle.dispatched:
            self._assign(done)
        if cycle.dispatched and self.flow.detector is not None:
            self.flow.detector.note_dispatched(len(cycle.dispatched))
        self.metrics.cycle(time.perf_counter() - self._cycle_started, self._stages)

    def _assign(self, done: Finalized) -> None:
        ex = self.live.get(done.request_id)
        if ex is None:
            return
        member = self.pool.pick(ex.prefix)
        if member is not None:
            self.pool.acquire(member, ex.tokens)
            ex.member = member

    def _evict(self, request_id: str) -> None:
        controller = self.controller
        demand = None if controller is None else controller.reclaimer.demand_of(request_id)
        if demand is not None:
            self.metrics.revocation_issued(demand)
        ex = self.live.get(request_id)
        if ex is not None:
            ex.interrupt(evicted=True)

    def _priorities_changed(self, priorities: frozenset[int]) -> None:
        controller = self.controller
        if controller is not None:
            controller.set_priorities(priorities)
            self.kick()

    def _stale_endpoints(self) -> int:
        detector = self.flow.detector
        return detector.stale_endpoints if isinstance(detector, UtilizationDetector) else 0

    # ---- the request path ----------------------------------------------------------------
    async def completions(
        self, scope: MutableMapping[str, Any], receive: Receive, send: Send
    ) -> None:
        """``POST /v1/completions`` and ``/v1/chat/completions``."""
        try:
            raw = await _read_all(receive)
        except ConnectionResetError:
            return
        if self.draining:
            await send_answer(send, shutting_down())
            return
        try:
            facts = read_body(raw)
        except BadRequest as exc:
            await send_answer(send, error_answer(400, str(exc)))
            return
        headers = self._trusted_headers(scope)
        ex = Exchange(
            str(next(self._ids)),
            task=asyncio.current_task(),
            prefix=facts.prefix,
            tokens=facts.prompt_tokens + facts.max_tokens,
        )
        self._enter(ex)
        watcher = asyncio.get_running_loop().create_task(_watch_disconnect(receive, ex))
        try:
            await self._serve(ex, facts, headers, len(raw), scope["path"], send)
        except asyncio.CancelledError:
            # A disconnect noticed while the last answer was going out: nothing left to do.
            if not (ex.disconnected or ex.evicted):
                raise
            _uncancel()
        finally:
            watcher.cancel()
            self._leave(ex)

    async def _serve(
        self,
        ex: Exchange,
        facts: RequestFacts,
        headers: list[tuple[bytes, bytes]],
        size: int,
        path: str,
        send: Send,
    ) -> None:
        ident = read_identity(header_map(headers))
        priority = self.objectives.priority_of(ident.objective)
        if self.adapter is None:
            if not await self._legacy_admit(ex, priority, send):
                return
        else:
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
            if not await self._admit(self.adapter, ex, request, labels, send):
                return
        await self._proxy(ex, facts, headers, path, send)

    async def _legacy_admit(self, ex: Exchange, priority: int, send: Send) -> bool:
        detector = self.flow.detector
        saturation = None
        if detector is not None:
            saturation = staged_view(
                detector, self.pool.snapshots(self.clock.now()), self.clock.now()
            ).saturation
        verdict = legacy_admit(priority, saturation)
        if not verdict.admitted:
            await send_answer(send, error_answer(verdict.status or 429, verdict.message))
            return False
        member = self.pool.pick(ex.prefix)
        if member is None:
            await send_answer(
                send,
                error_answer(503, "no model server endpoints available", h.REASON_NO_ENDPOINTS),
            )
            return False
        self.pool.acquire(member, ex.tokens)
        ex.member = member
        return True

    async def _admit(
        self, adapter: FlowAdapter, ex: Exchange, request: Request, labels: Labels, send: Send
    ) -> bool:
        """Wait for flow control; True when dispatched (``ex.member`` is then set)."""
        self.metrics.queued(labels, request.byte_size, 1)
        started = time.perf_counter()
        try:
            done = await adapter.enqueue_and_wait(request)
        except asyncio.CancelledError:
            if not (ex.evicted or ex.disconnected):
                raise
            _uncancel()
            await self._interrupted_while_waiting(ex, labels, send)
            return False
        finally:
            self.metrics.queued(labels, request.byte_size, -1)
        queued = done.outcome is Outcome.DISPATCHED or done.waited > 0
        enqueue_outcome = "NotYetFinalized" if queued else done.outcome.value
        self.metrics.enqueue(labels[0], labels[1], enqueue_outcome, time.perf_counter() - started)
        self.metrics.finished(labels, done.outcome.value, done.waited)
        if done.outcome is not Outcome.DISPATCHED:
            await send_answer(send, finalized_answer(done))
            return False
        if ex.member is None:  # the pool emptied between the cycle and now
            adapter.finished(ex.request_id)
            await send_answer(
                send,
                error_answer(503, "no model server endpoints available", h.REASON_NO_ENDPOINTS),
            )
            return False
        return True

    async def _interrupted_while_waiting(self, ex: Exchange, labels: Labels, send: Send) -> None:
        """The client left, or the request was evicted between dispatch and its first step.
        Flow control has already been told (the adapter handles a cancelled waiter)."""
        if ex.member is not None:
            self.pool.release(ex.member, ex.tokens)
            ex.member = None
        if ex.evicted:
            self.metrics.finished(labels, Outcome.DISPATCHED.value, 0.0)
            await send_answer(send, evicted_answer())
            return
        self.metrics.finished(labels, Outcome.EVICTED_CONTEXT_CANCELLED.value, 0.0)
        with contextlib.suppress(Exception):
            await send_answer(
                send,
                error_answer(503, "client disconnected while queued", h.REASON_CONTEXT_CANCELLED),
            )

    async def _proxy(
        self,
        ex: Exchange,
        facts: RequestFacts,
        headers: list[tuple[bytes, bytes]],
        path: str,
        send: Send,
    ) -> None:
        member = ex.member
        assert member is not None  # set by admission
        try:
            await relay(
                self.session,
                member.url + path,
                facts.body,
                forward_headers(headers),
                ex,
                send,
                strip_usage=facts.strip_usage,
                limit=self._timeout,
            )
        except asyncio.CancelledError:
            if not (ex.evicted or ex.disconnected):
                raise
            _uncancel()
            if ex.evicted:
                await self._send_evicted(ex, send)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            await self._upstream_failed(ex, member, exc, send)
        finally:
            self._finish(ex, member)

    async def _send_evicted(self, ex: Exchange, send: Send) -> None:
        with contextlib.suppress(Exception):
            if not ex.started:
                await send_answer(send, evicted_answer())
            else:
                await send({"type": "http.response.body", "body": EVICTED_EVENT})

    async def _upstream_failed(
        self, ex: Exchange, member: PoolMember, exc: BaseException, send: Send
    ) -> None:
        log.warning("upstream %s failed: %s: %s", member.url, type(exc).__name__, exc)
        if isinstance(exc, aiohttp.ClientConnectorError):
            self.pool.mark(member.url, False)
        with contextlib.suppress(Exception):
            if not ex.started:
                await send_answer(send, error_answer(502, f"upstream error: {exc}"))
            else:
                await send({"type": "http.response.body", "body": b""})

    def _finish(self, ex: Exchange, member: PoolMember) -> None:
        self.pool.release(member, ex.tokens)
        ex.member = None
        if self.adapter is None:
            return
        rev = self.adapter.finished(ex.request_id, ex.usage)
        if rev is not None and rev.latency is not None:
            self.metrics.revocation_confirmed(rev.latency)

    def _trusted_headers(self, scope: MutableMapping[str, Any]) -> list[tuple[bytes, bytes]]:
        raw: list[tuple[bytes, bytes]] = list(scope.get("headers") or [])
        if scope.get(TRUSTED_SCOPE_KEY):
            return raw
        client = scope.get("client")
        return self.trust.filter(client[0] if client else None, raw)

    def _enter(self, ex: Exchange) -> None:
        self.live[ex.request_id] = ex
        self._idle.clear()

    def _leave(self, ex: Exchange) -> None:
        self.live.pop(ex.request_id, None)
        if not self.live:
            self._idle.set()

    # ---- other routes --------------------------------------------------------------------
    async def models(self, send: Send) -> None:
        """``GET /v1/models`` from a healthy endpoint."""
        members = self.pool.healthy
        if not members:
            await send_answer(
                send,
                error_answer(503, "no model server endpoints available", h.REASON_NO_ENDPOINTS),
            )
            return
        try:
            async with self.session.get(members[0].url + "/v1/models") as resp:
                body = await resp.read()
                ctype = resp.headers.get("content-type", "application/json").encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": resp.status,
                        "headers": [
                            (b"content-type", ctype),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
        except (aiohttp.ClientError, OSError) as exc:
            await send_answer(send, error_answer(502, f"upstream error: {exc}"))
