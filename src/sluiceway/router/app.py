"""The router's ASGI application, and the seam where a coordinator mounts.

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions`` (flow control + proxy),
``GET /v1/models``, ``/healthz``, ``/readyz``, ``/metrics``.

Coordinator seam: :meth:`RouterApp.mount_coordinator` hands every request that carries the
mode header (``x-llm-d-async-mode``), and every request under the coordinator's own paths
(``/v1/requests/``), to another ASGI app on the same listener; everything else goes straight
to the router. The coordinator's passthrough calls :meth:`RouterApp.handle_local` in process
with a :class:`LocalRequest`: the router's own routes, without the mode dispatch and without
a loopback hop, the body already read and the coordinator's stamped objective and fairness
headers trusted. No ASGI scope is built for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from sluiceway.router.gateway import Gateway, RawHeaders, Receive, Vanished
from sluiceway.router.outcomes import error_answer
from sluiceway.router.proxy import Send
from sluiceway.wire import headers as h
from sluiceway.wire.answer import Answer, send_answer

__all__ = ["ASGIApp", "LocalRequest", "RouterApp"]

ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

_GENERATE = frozenset({"/v1/completions", "/v1/chat/completions"})


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

    def mount_coordinator(
        self,
        app: ASGIApp,
        *,
        mode_header: str = h.ASYNC_MODE,
        paths: tuple[str, ...] = ("/v1/requests/",),
    ) -> None:
        """Send requests with ``mode_header`` (any value) or under ``paths`` to ``app``."""
        self._coordinator = app
        self._mode_header = mode_header.lower().encode()
        self._coordinator_paths = paths

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await _lifespan(receive, send)
            return
        if kind != "http":
            return
        if self._coordinator is not None and self._for_coordinator(scope):
            await self._coordinator(scope, receive, send)
            return
        await self._route(
            scope["method"],
            scope["path"],
            send,
            lambda: self.gateway.completions(scope, receive, send),
        )

    async def handle_local(self, request: LocalRequest, send: Send) -> None:
        """The router's own handling of an in-process caller's request."""
        path = request.target.partition("?")[0]

        def generate() -> Awaitable[None]:
            return self.gateway.generate(
                path, request.headers, request.body, send, vanished=request.vanished
            )

        await self._route(request.method, path, send, generate)

    def _for_coordinator(self, scope: MutableMapping[str, Any]) -> bool:
        path: str = scope["path"]
        if self._coordinator_paths and path.startswith(self._coordinator_paths):
            return True
        return any(name == self._mode_header for name, _ in scope.get("headers") or ())

    async def _route(
        self, method: str, path: str, send: Send, generate: Callable[[], Awaitable[None]]
    ) -> None:
        if path in _GENERATE and method == "POST":
            await generate()
        elif path == "/v1/models" and method == "GET":
            await self.gateway.models(send)
        elif path == "/metrics":
            body = generate_latest(self.gateway.metrics.registry)
            await send_answer(send, Answer(200, body, (("content-type", CONTENT_TYPE_LATEST),)))
        elif path == "/healthz":
            await send_answer(send, _json(200, {"status": "ok"}))
        elif path == "/readyz":
            ready = self.gateway.ready
            status = {"status": "ready" if ready else "not ready"}
            await send_answer(send, _json(200 if ready else 503, status))
        else:
            await send_answer(send, error_answer(404, f"no route {method} {path}"))


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
