"""The coordinator's HTTP front door (Starlette): one handler per route, each a few steps.

- any path, mode header absent: forwarded untouched (headers included) to the gateway;
- ``passthrough``: classified against quota, stamped, streamed from the gateway;
- ``wait``: queued, held until the result (the wait cap: 202; the deadline: 504); a client
  that leaves cancels its request; ``enqueue``: queued, ``202 {"id", "status": "pending"}``;
- ``GET`` / ``DELETE /v1/requests/{id}``, ``GET /v1/models``, ``/healthz``, ``/readyz``,
  ``/metrics``, the Batch API (``batch_routes.py``); another method on these paths: 405.

A queued request is checked before it is queued (``validation.py``, ``catalog.py``); a broker
failing past the mailboxes' retries is 503 with ``Retry-After``, never 500. Every answer carries
``x-request-id`` (``request_ids.py``).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sluiceway.batch.service import BatchService
from sluiceway.broker.base import Broker
from sluiceway.clock import Clock
from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.coordinator.answers import (
    RequestRejected,
    answer_for_record,
    broker_unavailable,
    disallowed_method,
    oversized_body,
    pending_answer,
    rejected_answer,
    unknown_request,
)
from sluiceway.coordinator.batch_routes import batch_routes
from sluiceway.coordinator.catalog import ModelCatalog
from sluiceway.coordinator.forwarding import Forwarder, ForwardFailed
from sluiceway.coordinator.identity import TenantIdentity
from sluiceway.coordinator.intake import (
    AsyncMode,
    RequestBody,
    mode_of,
    parse_request_body,
    request_id_of,
    timeout_of,
)
from sluiceway.coordinator.mailbox import Lookup, Mailboxes, MailboxState, QueuedRequest
from sluiceway.coordinator.methods import CLASSIFIED_METHODS, Handler, own_routes
from sluiceway.coordinator.metrics import CoordinatorMetrics
from sluiceway.coordinator.passthrough import QuotaKeeper, stamped_headers
from sluiceway.coordinator.patience import PatienceBook, patience_settings
from sluiceway.coordinator.probes import Probes
from sluiceway.coordinator.request_ids import RequestIds, minted_id
from sluiceway.coordinator.responses import RelayResponse, WaitingResponse
from sluiceway.coordinator.routes import TenantRoutes
from sluiceway.coordinator.validation import check_content_type, check_queued_body
from sluiceway.errors import BrokerError
from sluiceway.wire import ErrorCode
from sluiceway.wire.answer import Answer
from sluiceway.wire.api_errors import error_body

__all__ = ["Coordinator", "CoordinatorParts"]

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES: Final = 10 * 1024 * 1024
_ID: Final = re.compile(r"^[a-zA-Z0-9-]{1,128}$")


@dataclass(frozen=True)
class CoordinatorParts:
    """What a coordinator runs on: its broker, quota counters, forwarder, clock and batches."""

    broker: Broker
    forwarder: Forwarder
    clock: Clock
    mailboxes: Mailboxes
    quota: QuotaKeeper
    batches: BatchService | None = None


def _answer(answer: Answer) -> Response:
    return Response(answer.body, answer.status, headers=dict(answer.headers))


def _target(request: Request) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


class Coordinator:
    """Request handling of one coordinator; :meth:`app` is its ASGI application."""

    def __init__(
        self,
        params: AsyncBrokerParams,
        parts: CoordinatorParts,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self._params = params
        self._parts = parts
        self._routes = TenantRoutes(params)
        keys = params.api_keys
        self._identity = TenantIdentity(tenant_header=params.tenant_header, api_keys=keys)
        self._max_body = max_body_bytes
        self._catalog = ModelCatalog(parts.forwarder)
        self.metrics = CoordinatorMetrics()
        self.patience = PatienceBook(patience_settings(params.patience))
        self.batches = parts.batches  # the Batch API, if served here
        self.metrics.watch_patience(self.patience, parts.clock)
        self._draining = asyncio.Event()

    @property
    def draining(self) -> bool:
        return self._draining.is_set()

    def begin_drain(self) -> None:
        """Stop holding: held waits answer 202 at once, ``/readyz`` turns 503."""
        self._draining.set()

    def app(self) -> RequestIds:
        probes = Probes(self._parts.broker, self.metrics.registry, draining=lambda: self.draining)
        own: dict[str, dict[str, Handler]] = {
            **probes.routes(),
            "/v1/models": {"GET": self._models},
            "/v1/requests/{id}": {"GET": self._fetch, "DELETE": self._delete},
            **batch_routes(self.batches, self._identity),
        }
        starlette = Starlette(
            exception_handlers={Exception: _internal_error},
            routes=[
                *own_routes(own, guard=self._guarded),
                Route("/{path:path}", self._guarded(self._handle), methods=_METHODS),
            ],
        )
        return RequestIds(starlette)

    def _guarded(self, handler: Handler) -> Handler:
        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestRejected as exc:
                self.metrics.answered("rejected", exc.status)
                return _answer(rejected_answer(exc))

        return guarded

    async def _handle(self, request: Request) -> Response:
        mode = mode_of(request.headers.get(self._params.mode_header))
        if mode is not None and request.method not in CLASSIFIED_METHODS:
            raise disallowed_method(request.method, request.url.path, CLASSIFIED_METHODS)
        raw = await self._body(request)
        if mode is None:
            return await self._forward_untouched(request, raw)
        tenant = self._identity.tenant(request.headers)
        body = parse_request_body(raw, mode, self._routes)
        if mode is AsyncMode.PASSTHROUGH:
            return await self._passthrough(request, raw, body, tenant)
        check_content_type(request.headers.get("content-type"))
        check_queued_body(body.doc, request.url.path)
        if not self._routes.models:  # no route names the models: the gateway's list does
            await self._catalog.check(body.model)
        return await self._queued(request, body, mode, tenant)

    async def _body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_body:
            raise oversized_body(self._max_body)
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self._max_body:
                raise oversized_body(self._max_body)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _forward_untouched(self, request: Request, raw: bytes) -> Response:
        headers = list(request.headers.items())
        if self._identity.uses_keys:  # keys guard every route, mode header or not
            self._identity.tenant(request.headers)
            headers = [(k, v) for k, v in headers if k not in _KEY_HEADERS]
        return await self._relay(request, raw, headers, on_close=_nothing, mode="untouched")

    async def _passthrough(
        self, request: Request, raw: bytes, body: RequestBody, tenant: str
    ) -> Response:
        placement = self._routes.place(model=body.model, tenant=tenant)
        quota = self._parts.quota
        hold = await quota.take(tenant)
        headers = stamped_headers(
            list(request.headers.items()),
            params=self._params,
            routes=self._routes,
            tier=placement.tier,
            tenant=tenant,
            hold=hold,
            drop=_KEY_HEADERS if self._identity.uses_keys else frozenset(),
        )
        keeper = quota.keeper_task(hold)

        async def close() -> None:
            if keeper is not None:
                keeper.cancel()
                await asyncio.gather(keeper, return_exceptions=True)
            await quota.give_back(hold)

        return await self._relay(request, raw, headers, on_close=close, mode="passthrough")

    async def _relay(
        self,
        request: Request,
        raw: bytes,
        headers: list[tuple[str, str]],
        *,
        on_close: Callable[[], Awaitable[None]],
        mode: str,
    ) -> Response:
        try:
            reply = await self._parts.forwarder.open(request.method, _target(request), headers, raw)
        except ForwardFailed as exc:
            await on_close()
            log.warning("%s", exc)
            # the address stays in the log: clients learn only that the gateway failed
            raise RequestRejected(
                502, "upstream_unreachable", "the gateway failed to answer"
            ) from None
        self.metrics.answered(mode, reply.status)
        return RelayResponse(reply, on_close)

    async def _queued(
        self, request: Request, body: RequestBody, mode: AsyncMode, tenant: str
    ) -> Response:
        request_id, given = request_id_of(request.headers, minted_id(request.scope))
        queued = self._queued_request(request, body, mode, tenant, request_id)
        try:
            found = await self._parts.mailboxes.attach_or_submit(queued, reattach=given)
        except BrokerError as exc:
            log.warning("enqueue of %s failed: %s", request_id, exc)
            raise broker_unavailable("ENQUEUE_FAILED", exc) from None
        if mode is AsyncMode.ENQUEUE:
            self.metrics.answered("enqueue", 202)
            return _answer(pending_answer(request_id))
        if found.state is MailboxState.READY and found.record is not None:
            return _answer(await self._delivered(tenant, request_id, found.record, mode="wait"))
        return self._wait_for_result(tenant, request_id, deadline=queued.deadline)

    def _queued_request(
        self, request: Request, body: RequestBody, mode: AsyncMode, tenant: str, rid: str
    ) -> QueuedRequest:
        placement = self._routes.place(model=body.model, tenant=tenant)
        if not placement.queue:
            raise RequestRejected(400, "no_queue", f"tenant {tenant!r} is served live only")
        timeout = timeout_of(request.headers.get(self._params.timeout_header), mode, self._params)
        now = self._parts.clock.now()
        if mode is AsyncMode.WAIT:
            timeout = self.patience.deadline_seconds(tenant, timeout, now)
        metadata = {self._params.quota.attribute: tenant}
        if traceparent := request.headers.get("traceparent"):
            metadata["traceparent"] = traceparent
        forwarded = {
            name: value
            for name in self._params.forward_headers
            if (value := request.headers.get(name)) is not None
        }
        return QueuedRequest(
            tenant=tenant,
            request_id=rid,
            queue=placement.queue,
            payload=body.doc,
            deadline=now + timeout,
            endpoint=request.url.path,
            metadata=metadata,
            headers=forwarded,
        )

    def _wait_for_result(self, tenant: str, request_id: str, *, deadline: float) -> Response:
        cap = self._params.wait_cap_seconds
        now = self._parts.clock.now()
        until = deadline if cap is None else min(deadline, now + cap)
        mailboxes = self._parts.mailboxes
        self.metrics.waiting.inc()

        async def outcome() -> Answer:
            try:
                record = await _until_set(
                    mailboxes.wait_for_result(tenant, request_id, until=until), self._draining
                )
            except BrokerError as exc:
                log.warning("wait for %s: %s", request_id, exc)
                self.metrics.answered("wait", 503)
                answer = rejected_answer(broker_unavailable("LOOKUP_FAILED", exc))
                return answer.with_headers(("x-request-id", request_id))  # still queued
            finally:
                self.metrics.waiting.dec()
            if record is not None:
                return await self._delivered(tenant, request_id, record, mode="wait")
            if self.draining:
                return pending_answer(request_id)
            if until < deadline:  # the wait cap: still fetchable later
                self.metrics.answered("wait", 202)
                return pending_answer(request_id)
            self.metrics.answered("wait", 504)
            return Answer(504, error_body("deadline exceeded", type="server_error", code=_DEADLINE))

        async def left() -> None:
            self.metrics.answered("wait", 499)
            gone = self._parts.clock.now()
            self.patience.observe(tenant, gone - now, gone)
            try:
                await mailboxes.cancel(tenant, request_id)
            except BrokerError as exc:
                log.warning("cancel of %s after a disconnect failed: %s", request_id, exc)

        return WaitingResponse(outcome, left)

    async def _delivered(self, tenant: str, request_id: str, record: str, *, mode: str) -> Answer:
        answer = answer_for_record(record)
        await self._parts.mailboxes.delivered(tenant, request_id)
        self.metrics.answered(mode, answer.status)
        return answer

    # -- result routes -------------------------------------------------------------------

    def _id_of(self, request: Request) -> tuple[str, str]:
        tenant = self._identity.tenant(request.headers)
        request_id = request.path_params["id"]
        if not _ID.match(request_id):
            raise RequestRejected(400, "invalid_request_id", "malformed request id")
        return tenant, request_id

    async def _fetch(self, request: Request) -> Response:
        tenant, request_id = self._id_of(request)
        try:
            found: Lookup = await self._parts.mailboxes.lookup(tenant, request_id)
        except BrokerError as exc:
            raise broker_unavailable("LOOKUP_FAILED", exc) from None
        if found.state is MailboxState.READY and found.record is not None:
            return _answer(await self._delivered(tenant, request_id, found.record, mode="fetch"))
        if found.state is MailboxState.PENDING:
            return _answer(pending_answer(request_id))
        raise unknown_request(request_id)

    async def _delete(self, request: Request) -> Response:
        tenant, request_id = self._id_of(request)
        try:
            deleted = await self._parts.mailboxes.delete(tenant, request_id)
        except BrokerError as exc:
            raise broker_unavailable("DELETE_FAILED", exc) from None
        if not deleted:  # unknown, gone, or another tenant's: as GET answers it
            raise unknown_request(request_id)
        return Response(status_code=204)

    async def _models(self, request: Request) -> Response:
        if self._identity.uses_keys:
            self._identity.tenant(request.headers)
        models = self._routes.models
        if not models:  # every model is served: the gateway's own list
            return await self._forward_untouched(request, b"")
        data = [{"id": m, "object": "model", "owned_by": "llm-d-async"} for m in models]
        return JSONResponse({"object": "list", "data": data})


_METHODS: Final = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_KEY_HEADERS: Final = frozenset({"authorization", "x-api-key"})
_DEADLINE: Final = str(ErrorCode.DEADLINE_EXCEEDED)


async def _nothing() -> None:
    return None


async def _internal_error(request: Request, exc: Exception) -> Response:
    """A bug still answers in the OpenAI envelope (and is logged with its traceback)."""
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return _answer(Answer(500, error_body("internal error", type="server_error", code="internal")))


async def _until_set(work: Awaitable[str | None], event: asyncio.Event) -> str | None:
    """``work``'s result, or None once ``event`` is set first."""
    task = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, stop, return_exceptions=True)
    return None if task.cancelled() else task.result()
