"""Own paths take their own methods and answer any other with 405 and ``Allow``, even though a
catch-all route after them takes every path and method."""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from sluiceway.coordinator.answers import RequestRejected, rejected_answer
from sluiceway.coordinator.methods import Handler, own_routes


async def call(app: Starlette, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    """One request through the ASGI app: status, headers, body."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("test", 80),
        "client": ("test", 1),
        "root_path": "",
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, b"".join(m.get("body", b"") for m in sent[1:])


def _answering(text: str) -> Handler:
    async def handler(request: Request) -> Response:
        return PlainTextResponse(text)

    return handler


def _guard(handler: Handler) -> Handler:
    async def guarded(request: Request) -> Response:
        try:
            return await handler(request)
        except RequestRejected as exc:
            answer = rejected_answer(exc)
            return Response(answer.body, answer.status, headers=dict(answer.headers))

    return guarded


def app() -> Starlette:
    table = {
        "/metrics": {"GET": _answering("metrics"), "HEAD": _answering("metrics")},
        "/v1/requests/{id}": {"GET": _answering("fetch"), "DELETE": _answering("delete")},
    }
    every = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(
        routes=[
            *own_routes(table, guard=_guard),
            Route("/{path:path}", _answering("forwarded"), methods=every),
        ]
    )


async def test_own_methods_reach_their_handlers() -> None:
    assert (await call(app(), "GET", "/metrics"))[2] == b"metrics"
    assert (await call(app(), "DELETE", "/v1/requests/a"))[2] == b"delete"
    assert (await call(app(), "POST", "/v1/other"))[2] == b"forwarded"


async def test_another_method_on_an_own_path_is_405_with_allow() -> None:
    status, headers, body = await call(app(), "POST", "/metrics")
    assert (status, headers["allow"]) == (405, "GET, HEAD")
    error = json.loads(body)["error"]
    assert error["code"] == "method_not_allowed" and "POST" in error["message"]
    status, headers, _ = await call(app(), "PUT", "/v1/requests/a")
    assert (status, headers["allow"]) == (405, "GET, DELETE")
