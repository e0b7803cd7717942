"""Where passthrough requests go: the router (or a model server) behind the coordinator.

:class:`GatewayClient` is the seam: :class:`HttpGatewayClient` calls it over HTTP with keep-alive
connections (aiohttp); a process that also runs the router can hand in an in-process upstream
instead, so passthrough costs no loopback hop. A reply streams: its first chunk is forwarded
before the upstream has finished, and closing it early aborts the upstream call, so a model
server frees the slot of a client that went away.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final, Protocol

import aiohttp
from starlette.types import ASGIApp

from sluiceway.errors import SluicewayError

__all__ = ["HOP_BY_HOP", "GatewayClient", "GatewayReply", "GatewayUnavailable", "HttpGatewayClient"]

# Headers that describe one connection, not the message (RFC 9110 7.6.1), plus the ones the
# HTTP client sets itself.
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_CHUNK: Final = 64 * 1024
_ASGI_CLOSE_SECONDS: Final = 5.0  # wall seconds an in-process app gets to end after a close


class GatewayUnavailable(SluicewayError):
    """The upstream could not be reached (connection refused, reset, timed out)."""


class GatewayReply(Protocol):
    """A streamed upstream answer; always :meth:`aclose` it."""

    status: int
    headers: list[tuple[str, str]]

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class GatewayClient(Protocol):
    async def open(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> GatewayReply:
        """Send a request (``target`` = path and query) and return once headers arrived."""
        ...

    async def aclose(self) -> None: ...


class _AiohttpReply:
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.headers = [(k, v) for k, v in response.headers.items() if k.lower() not in HOP_BY_HOP]

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.content.iter_chunked(_CHUNK):
            yield chunk

    async def aclose(self) -> None:
        # close(), not release(): an unfinished body must abort the upstream call.
        if not self._response.closed:
            self._response.close()


class HttpGatewayClient:
    """An :class:`GatewayClient` at ``base_url`` over one keep-alive connection pool."""

    def __init__(self, base_url: str, *, timeout: float) -> None:
        self._base = base_url.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, auto_decompress=False
            )
        return self._session

    async def open(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> GatewayReply:
        sent = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        try:
            response = await self._client().request(
                method, self._base + target, headers=sent, data=body or None
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise GatewayUnavailable(f"upstream {self._base} unreachable: {exc}") from exc
        return _AiohttpReply(response)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class _AsgiReply:
    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]],
        messages: asyncio.Queue[dict[str, Any]],
        task: asyncio.Task[None],
        gone: asyncio.Event,
    ) -> None:
        self.status = status
        self.headers = headers
        self._messages = messages
        self._task = task
        self._gone = gone

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            message = await self._messages.get()
            if message["type"] != "http.response.body":
                return  # the app ended without finishing its body
            if body := message.get("body", b""):
                yield bytes(body)
            if not message.get("more_body", False):
                return

    async def aclose(self) -> None:
        self._gone.set()  # the app sees http.disconnect, as from a client that left
        if not self._task.done():
            await asyncio.wait({self._task}, timeout=_ASGI_CLOSE_SECONDS)
        if not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class InProcessGateway:
    """A :class:`GatewayClient` that calls an ASGI app (the router) in this process: no loopback
    hop, the same streaming and the same disconnect semantics as over HTTP."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def open(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> GatewayReply:
        path, _, query = target.partition("?")
        scope: dict[str, Any] = {
            "type": "http",
            # 2.3: apps listen for http.disconnect while streaming (2.4 apps notice a client
            # that left only at their next write), so a close aborts them at once.
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [
                (k.lower().encode(), v.encode()) for k, v in headers if k.lower() not in HOP_BY_HOP
            ],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }
        messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        gone = asyncio.Event()
        request = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if request:
                return request.pop()
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            await messages.put(message)

        async def run() -> None:
            try:
                await self._app(scope, receive, send)  # type: ignore[arg-type]
            finally:
                await messages.put({"type": "sluiceway.app.done"})

        task = asyncio.create_task(run(), name=f"asgi-gateway {method} {path}")
        start = await messages.get()
        if start["type"] != "http.response.start":
            await asyncio.gather(task, return_exceptions=True)
            raise GatewayUnavailable(f"in-process gateway answered nothing for {path}")
        status = int(start["status"])
        raw = start.get("headers", [])
        headers_out = [(bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in raw]
        return _AsgiReply(status, headers_out, messages, task, gone)

    async def aclose(self) -> None:
        return None
