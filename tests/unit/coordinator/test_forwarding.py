"""Forwarding to the router in process: the request reaches it read whole, without an ASGI
scope; the answer streams back; closing early tells the router its caller left. And the real
router's in-process interface: its own routes, without a coordinator's mode dispatch."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import orjson
import pytest

from sluiceway.clock import VirtualClock
from sluiceway.coordinator.forwarding import ForwardFailed, RouterForwarder
from sluiceway.router.app import LocalRequest
from sluiceway.router.build import build_router, load_picker_config
from sluiceway.router.proxy import Send
from sluiceway.router.settings import RouterSettings


class Router:
    """Plays the router's part of :class:`~sluiceway.coordinator.forwarding.LocalRouter`."""

    def __init__(self) -> None:
        self.seen: list[LocalRequest] = []
        self.release = asyncio.Event()
        self.events: list[str] = []

    async def handle_local(self, request: LocalRequest, send: Send) -> None:
        self.seen.append(request)
        if request.target == "/silent":
            return
        head = [(b"x-mine", dict(request.headers).get(b"x-mine", b""))]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        waiting = asyncio.ensure_future(self.release.wait())
        left = asyncio.ensure_future(request.vanished())
        done, _ = await asyncio.wait({waiting, left}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        left.cancel()
        if left in done:
            self.events.append("caller left")
            return
        await send({"type": "http.response.body", "body": b"second"})


async def test_a_request_reaches_the_router_read_whole_and_streams_back() -> None:
    router = Router()
    forwarder = RouterForwarder(router)
    headers = [("X-Mine", "yes"), ("host", "x"), ("content-length", "2")]
    reply = await forwarder.open("POST", "/v1/completions?a=1", headers, b"hi")
    seen = router.seen[0]
    assert (seen.method, seen.target, seen.body) == ("POST", "/v1/completions?a=1", b"hi")
    assert seen.headers == [(b"x-mine", b"yes")]  # lower case, hop-by-hop dropped
    chunks = reply.chunks()
    assert await anext(chunks) == b"first"  # before the router has finished
    router.release.set()
    assert await anext(chunks) == b"second"
    await reply.aclose()
    assert reply.status == 200 and ("x-mine", "yes") in reply.headers


async def test_closing_early_tells_the_router_its_caller_left() -> None:
    router = Router()
    reply = await RouterForwarder(router).open("GET", "/stream", [], b"")
    assert await anext(reply.chunks()) == b"first"
    await reply.aclose()
    assert router.events == ["caller left"]


async def test_a_router_that_answers_nothing_is_a_failed_forward() -> None:
    with pytest.raises(ForwardFailed):
        await RouterForwarder(Router()).open("GET", "/silent", [], b"")


async def _local(app: Any, method: str, target: str, body: bytes = b"") -> tuple[int, bytes]:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def never() -> None:
        await asyncio.Event().wait()

    await app.handle_local(LocalRequest(method, target, [], body, never), send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def test_the_real_router_answers_an_in_process_request_on_its_own_routes() -> None:
    config, _ = load_picker_config(None)
    settings = RouterSettings(endpoints=("http://127.0.0.1:9",))
    app, _ = build_router(config, settings, VirtualClock())
    calls: list[object] = []

    async def coordinator(scope: Any, receive: Any, send: Any) -> None:
        calls.append(scope)

    app.mount_coordinator(coordinator, paths=("/v1/requests/",))
    assert (await _local(app, "GET", "/healthz"))[0] == 200
    status, body = await _local(app, "GET", "/v1/requests/abc")
    assert status == 404 and calls == []  # the router's own routes, never the coordinator
    status, body = await _local(app, "POST", "/v1/completions?x=1", b"not json")
    assert status == 400 and "error" in orjson.loads(body)
