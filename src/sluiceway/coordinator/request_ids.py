"""Every answer of the coordinator carries ``x-request-id`` (an ASGI wrapper around its app).

The id is the caller's when it sent one the router would keep (:mod:`sluiceway.wire.request_ids`),
else a fresh one. A request that came without the header gets the fresh id added to its
headers, so every path sees the same one: passthrough and untouched requests forward it (the
router and the model server log it), a queued request is stored under it. The scope marks such
an id as the coordinator's own (:func:`minted_id`): a queued request then does not try to
re-attach to an earlier request of that id, which only a caller's own id can mean. A malformed
id is left as the caller sent it (queued, it is refused with 400; passed through, the router
replaces it), and the coordinator's own answer then carries a fresh one. An answer that already
names an id keeps it: the 202 of a queued request (its id), the router's answer relayed on
passthrough (the id that went upstream). An answer under ``/v1/requests/{id}`` carries that
``id``: it is about that request, whatever this call's own header says, so a fetched result, a
202 still pending and a 409 cancelled all name the request they answer for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from sluiceway.wire import headers as h
from sluiceway.wire.request_ids import echoable, new_request_id, request_id_for
from sluiceway.wire.response_head import stamp_head

__all__ = ["MINTED", "RESULTS", "RequestIds", "minted_id"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The scope key holding the id the coordinator minted for a request that came without one.
MINTED: Final = "sluiceway.request_id.minted"
# Where results are fetched and deleted by id (``app.py``'s ``/v1/requests/{id}``).
RESULTS: Final = "/v1/requests/"
_NAME: Final = h.REQUEST_ID.encode()


def minted_id(scope: Scope) -> str | None:
    """The id the coordinator gave a request that came without one (None: the caller's)."""
    value = scope.get(MINTED)
    return value if isinstance(value, str) else None


class RequestIds:
    """Wraps the coordinator's ASGI app; see the module doc."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = list(scope.get("headers") or ())
        given = next((v.decode("latin-1") for n, v in raw if n == _NAME), None)
        path: str = scope.get("path", "")
        if path.startswith(RESULTS) and echoable(path[len(RESULTS) :]):
            rid = path[len(RESULTS) :]
        elif given is None:
            rid = new_request_id()
            scope = {**scope, "headers": [*raw, (_NAME, rid.encode())], MINTED: rid}
        else:
            rid, _ = request_id_for(given)
        await self.app(scope, receive, stamp_head(send, ((h.REQUEST_ID, rid),), replace=False))
