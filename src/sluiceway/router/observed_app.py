"""The router's app with its operator signals: access log, HTTP metrics, traces.

Every request the router answers itself, over HTTP or in process from a mounted coordinator,
gets a record current in :data:`~sluiceway.router.current_request.CURRENT` while its handler
runs, with its ``send`` watched; when the handler returns, however it ends, the record is
settled and handed to the sinks. Requests handed to the mounted coordinator are its to
observe (they reach the router again, in process, when they pass through). Probes are counted
in the metrics, neither logged nor traced.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from sluiceway.observability.request_observer import RawHeaders, RequestObserver
from sluiceway.observability.served_request import UNMATCHED_ROUTE, ServedRequest
from sluiceway.router.app import LocalRequest, RouterApp
from sluiceway.router.current_request import CURRENT, CurrentRequest, settle
from sluiceway.router.gateway import Gateway, Receive
from sluiceway.router.proxy import Send
from sluiceway.router.routes import ROUTES

__all__ = ["ObservedRouterApp"]


class ObservedRouterApp(RouterApp):
    """A :class:`RouterApp` whose requests feed ``observer``."""

    def __init__(self, gateway: Gateway, observer: RequestObserver) -> None:
        super().__init__(gateway)
        self.observer = observer

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        answer = super().__call__
        if scope["type"] != "http" or self._coordinators(scope):
            await answer(scope, receive, send)
            return
        record = self._begin(scope["method"], scope["path"], scope.get("headers") or [])
        await self._observed(record, send, lambda s: answer(scope, receive, s))

    async def handle_local(self, request: LocalRequest, send: Send) -> None:
        answer = super().handle_local
        record = self._begin(request.method, request.target.partition("?")[0], request.headers)
        await self._observed(record, send, lambda s: answer(request, s))

    async def _observed(
        self, record: ServedRequest, send: Send, answer: Callable[[Send], Awaitable[None]]
    ) -> None:
        current = CurrentRequest(record)
        token = CURRENT.set(current)
        try:
            await answer(self.observer.watch(record, send))
        finally:
            CURRENT.reset(token)
            settle(current)
            self.observer.end(record)

    def _coordinators(self, scope: MutableMapping[str, Any]) -> bool:
        """Whether the mounted coordinator answers this request (and observes it)."""
        return self._coordinator is not None and self._for_coordinator(scope)

    def _begin(self, method: str, path: str, headers: RawHeaders) -> ServedRequest:
        spec = ROUTES.get(path)
        route = UNMATCHED_ROUTE if spec is None else path
        probe = spec is not None and spec.keyless
        return self.observer.begin(method, path, route, headers, probe=probe)
