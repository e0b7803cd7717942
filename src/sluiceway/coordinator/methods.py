"""The methods each of the coordinator's own paths takes; any other is 405 with ``Allow``.

Starlette would answer a method a route does not take with 405 only when no later route takes
it, and the coordinator's last route takes every path and method (requests it forwards
untouched): ``POST /metrics`` would be forwarded to the gateway, and ``POST
/v1/requests/{id}`` with the mode header queued. So each own path takes every method here and
answers those it does not serve itself, in the OpenAI envelope. A classified request (mode
header) must be a ``POST``: it carries the JSON body it is classified by.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sluiceway.coordinator.answers import disallowed_method

__all__ = ["CLASSIFIED_METHODS", "EVERY_METHOD", "PROBE", "Handler", "own_routes"]

Handler = Callable[[Request], Awaitable[Response]]

EVERY_METHOD: Final = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
CLASSIFIED_METHODS: Final = ("POST",)
PROBE: Final = ("GET", "HEAD")


def own_routes(
    table: Mapping[str, Mapping[str, Handler]], *, guard: Callable[[Handler], Handler]
) -> list[Route]:
    """One route per path of ``table`` (path -> method -> handler), each ``guard``-ed."""
    return [
        Route(path, guard(_dispatch(path, handlers)), methods=list(EVERY_METHOD))
        for path, handlers in table.items()
    ]


def _dispatch(path: str, handlers: Mapping[str, Handler]) -> Handler:
    allowed = tuple(handlers)

    async def dispatch(request: Request) -> Response:
        handler = handlers.get(request.method)
        if handler is None:
            raise disallowed_method(request.method, path, allowed)
        return await handler(request)

    return dispatch
