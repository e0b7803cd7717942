"""The in-process gateway: an ASGI app called without a socket, streamed, and abortable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from sluiceway.coordinator.gateway import GatewayUnavailable, InProcessGateway


def app(events: list[str], release: asyncio.Event) -> Starlette:
    async def echo(request: Request) -> Response:
        body = await request.body()
        seen = f"{request.method} {request.url.path}?{request.url.query} {body.decode()}"
        return Response(seen, headers={"x-mine": request.headers.get("x-mine", "")})

    async def stream(request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            try:
                yield b"first"
                await release.wait()
                yield b"second"
            except asyncio.CancelledError:
                events.append("cancelled")
                raise

        return StreamingResponse(chunks())

    return Starlette(
        routes=[Route("/echo", echo, methods=["POST"]), Route("/stream", stream, methods=["GET"])]
    )


async def test_a_request_reaches_the_app_and_its_answer_comes_back() -> None:
    gateway = InProcessGateway(app([], asyncio.Event()))
    reply = await gateway.open("POST", "/echo?a=1", [("x-mine", "yes"), ("host", "x")], b"hi")
    body = b"".join([c async for c in reply.chunks()])
    await reply.aclose()
    assert reply.status == 200
    assert body == b"POST /echo?a=1 hi"
    assert ("x-mine", "yes") in reply.headers


async def test_the_first_chunk_arrives_before_the_app_finishes() -> None:
    release = asyncio.Event()
    gateway = InProcessGateway(app([], release))
    reply = await gateway.open("GET", "/stream", [], b"")
    chunks = reply.chunks()
    assert await anext(chunks) == b"first"
    release.set()
    assert await anext(chunks) == b"second"
    await reply.aclose()


async def test_closing_early_aborts_the_app() -> None:
    events: list[str] = []
    gateway = InProcessGateway(app(events, asyncio.Event()))
    reply = await gateway.open("GET", "/stream", [], b"")
    assert await anext(reply.chunks()) == b"first"
    await reply.aclose()
    assert events == ["cancelled"]


async def test_an_app_that_answers_nothing_is_unavailable() -> None:
    async def silent(scope: object, receive: object, send: object) -> None:
        return None

    with pytest.raises(GatewayUnavailable):
        await InProcessGateway(silent).open("GET", "/", [], b"")  # type: ignore[arg-type]
