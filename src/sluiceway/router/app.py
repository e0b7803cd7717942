"""The router's ASGI application, and the seam where a coordinator mounts.

Routes come from one table (:data:`~sluiceway.router.routes.ROUTES`): vLLM's POST routes
(completions, chat, responses, embeddings, score, rerank, tokenize...) go through flow control
and are proxied; ``GET /v1/models`` lists what the pool serves; the probes (``/health``,
``/healthz``, ``/readyz``, ``/metrics``) are answered here. Another method on a known path is
405 with ``Allow``. Every request over the header limits is 431 before it goes anywhere.
Every answer of the router's own carries ``x-request-id``: the caller's, or a fresh one that
is also what the model server receives (:func:`~sluiceway.router.identity.claim_request_id`).

Coordinator seam: :meth:`RouterApp.mount_coordinator` hands every request that carries the
mode header (``x-llm-d-async-mode``), and every request under the coordinator's own paths
(``/v1/requests/``; the coordinator also mounts with the Batch API's ``/v1/files`` and
``/v1/batches``), to another ASGI app on the same listener; everything else goes straight
to the router. The coordinator's passthrough calls :meth:`RouterApp.handle_local` in process
with a :class:`LocalRequest`: the router's own routes, without the mode dispatch and without
a loopback hop, the body already read and the coordinator's stamped objective and fairness
headers trusted. No ASGI scope is built for it.

A coordinator with API keys mounts with its key check: then the router's own routes need a key
too (401 without one; the probes ``/healthz``, ``/readyz`` and ``/metrics`` excepted, as on the
coordinator), and direct callers' objective and fairness headers follow
:meth:`~sluiceway.router.trust.HeaderTrust.behind_keys`. It also mounts with its drain hook:
:meth:`RouterApp.drain` calls it before the gateway drains, so held wait-mode connections are
answered at once rather than at their wait cap.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from sluiceway.router.gateway import Gateway, RawHeaders, Receive, Vanished
from sluiceway.router.identity import claim_request_id, header_map
from sluiceway.router.outcomes import (
    error_answer,
    headers_too_large,
    method_not_allowed,
    unauthorized,
)
from sluiceway.router.proxy import Send
from sluiceway.router.request_facts import CostRule
from sluiceway.router.routes import ROUTES, Handler
from sluiceway.wire import headers as h
from sluiceway.wire.answer import Answer, send_answer
from sluiceway.wire.response_head import stamp_head

__all__ = ["ASGIApp", "KeyCheck", "LocalRequest", "RouterApp"]

log = logging.getLogger(__name__)

ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]
# Whether a request's headers (lower-case names) carry a known API key.
KeyCheck = Callable[[Mapping[str, str]], bool]


def _json(status: int, body: dict[str, Any]) -> Answer:
    return Answer(status, orjson.dumps(body))


@dataclass(frozen=True, slots=True)
class LocalRequest:
    """A request from a caller in this process (the mounted coordinator): read whole, its
    identity headers trusted; ``vanished`` returns once the caller stops listening.
    ``target`` is the path and query; header names are lower case."""

    method: str
    target: str
    headers: RawHeaders
    body: bytes
    vanished: Vanished


class RouterApp:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._coordinator: ASGIApp | None = None
        self._mode_header = h.ASYNC_MODE.encode()
        self._coordinator_paths: tuple[str, ...] = ()
        self._key_check: KeyCheck | None = None
        self._on_drain: Callable[[], None] | None = None

    def mount_coordinator(
        self,
        app: ASGIApp,
        *,
        mode_header: str = h.ASYNC_MODE,
        paths: tuple[str, ...] = ("/v1/requests/",),
        key_check: KeyCheck | None = None,
        on_drain: Callable[[], None] | None = None,
    ) -> None:
        """Send requests with ``mode_header`` (any value) or under ``paths`` to ``app``.

        ``key_check``: the coordinator's API keys also guard the router's own routes.
        ``on_drain``: called when the router starts draining, before its own drain."""
        self._coordinator = app
        self._mode_header = mode_header.lower().encode()
        self._coordinator_paths = paths
        self._key_check = key_check
        self._on_drain = on_drain
        if key_check is not None:
            self.gateway.trust = self.gateway.trust.behind_keys()

    async def drain(self) -> None:
        """Stop taking requests: the mounted coordinator's drain first (its held waits answer
        202 at once), then the gateway's."""
        if self._on_drain is not None:
            self._on_drain()
        await self.gateway.drain()

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await _lifespan(receive, send)
            return
        if kind != "http":
            return
        raw: RawHeaders = scope.get("headers") or []
        problem = self.gateway.settings.limits.header_problem(raw)
        if problem is not None:
            log.debug("431 for %s %s: %s", scope["method"], scope["path"], problem)
            answering = _answering_as(send, claim_request_id(raw)[0])
            await send_answer(answering, headers_too_large(problem))
            return
        if self._coordinator is not None and self._for_coordinator(scope):
            await self._coordinator(scope, receive, send)  # it stamps its own request ids
            return
        rid, scope["headers"] = claim_request_id(raw)
        send = _answering_as(send, rid)
        if not self._key_ok(scope["path"], raw):
            log.debug("401 for %s %s: no known API key", scope["method"], scope["path"])
            await send_answer(send, unauthorized())
            return
        await self._route(
            scope["method"],
            scope["path"],
            send,
            lambda cost: self.gateway.completions(scope, receive, send, cost),
        )

    async def handle_local(self, request: LocalRequest, send: Send) -> None:
        """The router's own handling of an in-process caller's request."""
        path = request.target.partition("?")[0]
        rid, headers = claim_request_id(request.headers)
        send = _answering_as(send, rid)

        def generate(cost: CostRule) -> Awaitable[None]:
            return self.gateway.generate(
                path, headers, request.body, send, vanished=request.vanished, cost=cost
            )

        await self._route(request.method, path, send, generate)

    def _key_ok(self, path: str, raw: RawHeaders) -> bool:
        """False when the mounted coordinator's keys guard ``path`` and ``raw`` has no key."""
        route = ROUTES.get(path)
        if self._key_check is None or (route is not None and route.keyless):
            return True
        return self._key_check(header_map(raw))

    def _for_coordinator(self, scope: MutableMapping[str, Any]) -> bool:
        path: str = scope["path"]
        if self._coordinator_paths and path.startswith(self._coordinator_paths):
            return True
        return any(name == self._mode_header for name, _ in scope.get("headers") or ())

    async def _route(
        self,
        method: str,
        path: str,
        send: Send,
        generate: Callable[[CostRule], Awaitable[None]],
    ) -> None:
        route = ROUTES.get(path)
        if route is None:
            await send_answer(send, error_answer(404, f"no route {method} {path}"))
        elif method not in route.methods:
            await send_answer(send, method_not_allowed(method, path, route.methods))
        elif route.cost is not None:
            await generate(route.cost)
        elif route.handler is Handler.MODELS:
            await send_answer(send, self.gateway.models())
        else:
            await send_answer(send, self._probe(route.handler))

    def _probe(self, handler: Handler) -> Answer:
        """The router's own probes: metrics, liveness, readiness."""
        if handler is Handler.METRICS:
            body = generate_latest(self.gateway.metrics.registry)
            return Answer(200, body, (("content-type", CONTENT_TYPE_LATEST),))
        if handler is Handler.HEALTH:
            return _json(200, {"status": "ok"})
        if handler is Handler.ALIVE:
            return Answer(200, b"", ())
        reason = self.gateway.not_ready_reason
        if reason is None:
            return _json(200, {"status": "ready"})
        return _json(503, {"status": "not ready", "reason": reason})


def _answering_as(send: Send, request_id: str) -> Send:
    """``send`` whose response head carries exactly ``request_id`` as ``x-request-id``."""
    return stamp_head(send, ((h.REQUEST_ID, request_id),), replace=True)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
