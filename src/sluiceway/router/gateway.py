"""The router's request path: read, admit, proxy, finish.

One :class:`Gateway` per process. ``completions`` handles every proxied route (completions,
chat, responses, embeddings, ...) as a raw ASGI callable:

1. read the body (up to the body limit: 413 above) and headers (untrusted callers lose their
   identity headers); its cost is read by the route's rule; a model no endpoint serves is
   answered 404 at once (:mod:`sluiceway.router.served_models`);
2. admission (:class:`~sluiceway.router.flow.RouterFlow`): flow control, or legacy shedding
   when it is off; a drop is answered with its status and reason;
3. the upstream answer is relayed as it arrives (:mod:`sluiceway.router.proxy`); a connection
   that fails before the response starts is retried on another endpoint
   (:mod:`sluiceway.router.failover`);
4. at the end the endpoint is released and flow control told, with the captured usage.

Eviction and client disconnect interrupt the request's
:class:`~sluiceway.router.exchange.Exchange`: the wait it is in (queued, or the upstream call)
is cut short at once and the upstream connection closed. An evicted request gets 429
``evicted`` before the first byte, or a terminal SSE error event of code ``evicted`` once
streaming. Every answer to a request flow control queued carries the time it queued
(``x-llm-d-flow-queue-duration-ms``); every 429 and 503 a ``Retry-After``.

A model server that fails before the response starts, with no other to retry on, gets the
client a 502; one that stops mid-stream ends the stream with an SSE error event (never as if
complete). Both are logged with the server's address, counted, and told to the client without
it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiohttp

from sluiceway.clock import Clock
from sluiceway.flowcontrol.configure import RouterFlowControl
from sluiceway.flowcontrol.controller import FlowController
from sluiceway.router import current_request
from sluiceway.router.exchange import Exchange
from sluiceway.router.failover import Failover
from sluiceway.router.flow import RouterFlow
from sluiceway.router.identity import header_map, read_identity
from sluiceway.router.limits import BodyTooLarge, read_body
from sluiceway.router.metrics import RouterMetrics
from sluiceway.router.objectives import ObjectiveTable
from sluiceway.router.outcomes import (
    EVICTED_EVENT,
    UPSTREAM_CUT_EVENT,
    body_too_large,
    error_answer,
    evicted_answer,
    shutting_down,
    upstream_failed,
)
from sluiceway.router.pool import EndpointPool, PoolMember
from sluiceway.router.proxy import Send, StreamCut, forward_headers, relay
from sluiceway.router.request_facts import (
    GENERATION,
    BadRequest,
    CostRule,
    RequestFacts,
    read_request_facts,
)
from sluiceway.router.served_models import ServedModels, unserved_answer
from sluiceway.router.settings import RouterSettings
from sluiceway.router.trust import HeaderTrust
from sluiceway.wire import headers as h
from sluiceway.wire.answer import Answer, send_answer
from sluiceway.wire.response_head import stamp_head

__all__ = ["Gateway", "RawHeaders", "Receive", "Vanished"]

log = logging.getLogger(__name__)

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
RawHeaders = list[tuple[bytes, bytes]]
# Returns once the caller has stopped listening (an HTTP client disconnected, an in-process
# caller closed its reply).
Vanished = Callable[[], Awaitable[None]]


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _interrupt_when(vanished: Vanished, ex: Exchange) -> None:
    await vanished()
    ex.interrupt()


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
        self.clock = clock
        self.trust = trust or HeaderTrust()
        self.metrics = metrics or RouterMetrics(settings.pool_label)
        self.pool = pool or EndpointPool(settings.endpoints, clock)
        self.live: dict[str, Exchange] = {}
        self.admission = RouterFlow(
            flow, clock, self.pool, self.metrics, self.live, settings.ledger
        )
        self.objectives = objectives or ObjectiveTable()
        self.objectives.on_change = self.admission.set_priorities
        self.admission.set_priorities(frozenset(self.objectives.names().values()))
        self.served_models = ServedModels(
            self.pool, clock, interval=settings.models_interval, timeout=settings.health_timeout
        )
        self.failover = Failover(self.pool, self.metrics, clock, retries=settings.upstream_retries)
        self.pool.on_change = self._pool_changed
        self.draining = False
        self.started = False
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._background: list[asyncio.Task[None]] = []
        self._idle = asyncio.Event()
        self._idle.set()

    # ---- lifecycle ---------------------------------------------------------------------
    @property
    def flow(self) -> RouterFlowControl:
        return self.admission.flow

    @property
    def controller(self) -> FlowController | None:
        return self.admission.controller

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("Gateway.start() was not called")
        return self._session

    @property
    def not_ready_reason(self) -> str | None:
        """Why ``/readyz`` is 503 (None: ready). A router with no healthy endpoint (none
        configured, or every one failing its check) is not ready: a balancer should send
        elsewhere rather than have every request queue and fail here."""
        if not self.started:
            return "starting"
        if self.draining:
            return "draining"
        if not self.pool.healthy:
            return "no healthy endpoint"
        return None

    def kick(self) -> None:
        """Capacity changed (an endpoint came or went, a scrape landed): run a cycle."""
        self.admission.kick()

    def _pool_changed(self) -> None:
        """The healthy set changed: run a cycle; ask an endpoint that turned healthy for its
        models."""
        self.kick()
        self.served_models.pool_changed()

    async def start(self) -> None:
        """Open the upstream client, check every endpoint once and learn the healthy ones'
        models, start the background tasks (the others are asked when they turn healthy)."""
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=90, enable_cleanup_closed=True)
        session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        self._session = session
        s = self.settings
        await self.pool.check_all(session, s.health_timeout)
        await self.served_models.learn(session, [m.url for m in self.pool.healthy])
        loop = asyncio.get_running_loop()
        self._background = [
            loop.create_task(self.pool.run_checks(session, s.health_interval, s.health_timeout)),
            loop.create_task(self.served_models.run(session)),
        ]
        self.admission.start()
        self.started = True

    async def set_endpoints(self, urls: list[str]) -> None:
        """The pool is now ``urls`` (discovery): new endpoints are asked for their models, then
        checked, at once, so one that passes takes traffic now, for its own models, rather than
        at the next round."""
        added = self.pool.update(urls)
        if added and self._session is not None:
            await self.served_models.learn(self._session, added)
            await self.pool.check_all(self._session, self.settings.health_timeout, added)

    async def drain(self) -> None:
        """Stop taking requests; queued ones get 503 ``rejected-shutting-down``; running ones
        get ``drain_timeout`` to finish, then are cut."""
        self.draining = True
        await self.admission.close()
        with contextlib.suppress(TimeoutError):
            limit = self.clock.to_wall(self.settings.drain_timeout)
            await asyncio.wait_for(self._idle.wait(), limit)
        for ex in list(self.live.values()):
            ex.interrupt()

    async def aclose(self) -> None:
        for task in self._background:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ---- the request path ----------------------------------------------------------------
    async def completions(
        self,
        scope: MutableMapping[str, Any],
        receive: Receive,
        send: Send,
        cost: CostRule = GENERATION,
    ) -> None:
        """A proxied route over HTTP (completions, chat, embeddings...), costed by ``cost``."""
        limit = self.settings.limits.body_bytes
        try:
            if self.settings.limits.declared_too_large(scope.get("headers") or ()):
                raise BodyTooLarge(limit)
            raw = await read_body(receive, limit)
        except BodyTooLarge:
            log.debug("413 for %s: body over %d bytes", scope["path"], limit)
            await send_answer(send, body_too_large(limit))
            return
        except ConnectionResetError:
            return
        headers = self._trusted_headers(scope)
        await self.generate(
            scope["path"], headers, raw, send, vanished=lambda: _disconnect(receive), cost=cost
        )

    async def generate(
        self,
        path: str,
        headers: RawHeaders,
        raw: bytes,
        send: Send,
        *,
        vanished: Vanished,
        cost: CostRule = GENERATION,
    ) -> None:
        """One proxied request, read whole, its identity ``headers`` already trusted or
        filtered: admit, proxy, finish. ``vanished`` returns once the caller left."""
        if self.draining:
            await send_answer(send, self.admission.advised(shutting_down()))
            return
        try:
            facts = read_request_facts(raw, cost)
        except BadRequest as exc:
            await send_answer(send, error_answer(400, str(exc)))
            return
        unserved = unserved_answer(facts.model, self.pool.members.values())
        if unserved is not None:
            await send_answer(send, self.admission.advised(unserved))
            return
        ex = Exchange(
            str(next(self._ids)),
            prefix=facts.prefix,
            tokens=facts.prompt_tokens + facts.max_tokens,
            model=facts.model,
        )
        self._enter(ex)
        watcher = asyncio.get_running_loop().create_task(_interrupt_when(vanished, ex))
        try:
            await self._serve(ex, facts, headers, len(raw), path, send)
        finally:
            watcher.cancel()
            self._leave(ex)

    async def _serve(
        self,
        ex: Exchange,
        facts: RequestFacts,
        headers: RawHeaders,
        size: int,
        path: str,
        send: Send,
    ) -> None:
        ident = read_identity(header_map(headers))
        priority = self.objectives.priority_of(ident.objective)
        current_request.identified(ex, ident, priority)
        answer = await self.admission.admit(ex, facts, ident, priority, size)
        current_request.admitted(ex)
        if ex.waited is not None:  # it queued: the time it did, on whatever answers it
            waited = str(max(0, round(ex.waited * 1000)))
            send = stamp_head(send, ((h.FLOW_QUEUE_DURATION_MS, waited),), replace=True)
        if answer is not None:
            with contextlib.suppress(OSError, RuntimeError):
                await send_answer(send, answer)
            return
        try:
            await self._proxy(ex, facts, headers, path, send)
        finally:
            self.admission.finish(ex)

    async def _proxy(
        self, ex: Exchange, facts: RequestFacts, headers: RawHeaders, path: str, send: Send
    ) -> None:
        """Relay from the endpoint admission chose; one that fails before the response starts
        is replaced (failover) while retries and time are left."""
        forwarded = forward_headers(headers)
        budget = self.failover.budget(self.settings.upstream_timeout)
        while True:
            member = ex.member
            assert member is not None  # admission (or failover) set it
            current_request.upstream(forwarded, member.url)
            try:
                with ex.interruptible() as cut:
                    await relay(
                        self.session,
                        member.url + path,
                        facts.body,
                        forwarded,
                        ex,
                        send,
                        strip_usage=facts.strip_usage,
                        limit=self.failover.limit(budget),
                    )
            except (aiohttp.ClientError, OSError, TimeoutError, StreamCut) as exc:
                if isinstance(exc, aiohttp.ClientConnectorError):
                    self.pool.mark(member.url, False)  # refused: out until a check passes
                if self.failover.replace(ex, member, exc, budget) is None:
                    await self._upstream_failed(ex, member, exc, send)
                    return
                continue
            break
        if cut.cancelled_caught and ex.evicted:
            await self._send_evicted(ex, send)

    async def _send_evicted(self, ex: Exchange, send: Send) -> None:
        with contextlib.suppress(Exception):
            if not ex.started:
                await send_answer(send, self.admission.advised(evicted_answer(), ex))
            else:
                await send({"type": "http.response.body", "body": EVICTED_EVENT})

    async def _upstream_failed(
        self, ex: Exchange, member: PoolMember, exc: BaseException, send: Send
    ) -> None:
        """Log the server and the cause; the client gets a 502 or, mid-stream, the error
        event, neither naming the server."""
        when = "mid-stream" if ex.started else "before the response"
        log.warning("upstream %s failed %s: %s: %s", member.url, when, type(exc).__name__, exc)
        self.metrics.upstream_failed(mid_stream=ex.started)
        with contextlib.suppress(Exception):
            if not ex.started:
                await send_answer(send, upstream_failed())
            else:
                await send({"type": "http.response.body", "body": UPSTREAM_CUT_EVENT})

    def _trusted_headers(self, scope: MutableMapping[str, Any]) -> RawHeaders:
        raw: RawHeaders = list(scope.get("headers") or [])
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
    def models(self) -> Answer:
        """``GET /v1/models``: every model a healthy endpoint serves, as learned."""
        if not self.pool.healthy:
            answer = error_answer(503, "no model server endpoints available", h.REASON_NO_ENDPOINTS)
            return self.admission.advised(answer)
        return Answer(200, self.served_models.listing())
