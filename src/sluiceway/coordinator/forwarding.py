"""Where passthrough requests go: the router (or a model server) behind the coordinator.

:class:`Forwarder` is the seam. :class:`HttpForwarder` forwards over HTTP with keep-alive
connections (aiohttp). :class:`RouterForwarder` calls the router in this process through its
in-process interface (:meth:`~sluiceway.router.app.RouterApp.handle_local`), so passthrough
costs no loopback hop and builds no ASGI scope. A reply streams: its first chunk is forwarded
before the upstream has finished, and closing it early aborts the upstream call, so a model
server frees the slot of a client that went away.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping, Sequence
from typing import Any, Final, Protocol

import aiohttp

from sluiceway.errors import SluicewayError
from sluiceway.router.app import LocalRequest
from sluiceway.router.proxy import Send

__all__ = [
    "HOP_BY_HOP",
    "ForwardFailed",
    "ForwardedReply",
    "Forwarder",
    "HttpForwarder",
    "LocalRouter",
    "RouterForwarder",
]

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
_CLOSE_SECONDS: Final = 5.0  # wall seconds the in-process router gets to end after a close


class ForwardFailed(SluicewayError):
    """The upstream could not be reached (connection refused, reset, timed out)."""


class ForwardedReply(Protocol):
    """A streamed upstream answer; always :meth:`aclose` it."""

    status: int
    headers: list[tuple[str, str]]

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class Forwarder(Protocol):
    async def open(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> ForwardedReply:
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


class HttpForwarder:
    """A :class:`Forwarder` to ``base_url`` over one keep-alive connection pool."""

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
    ) -> ForwardedReply:
        sent = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        try:
            response = await self._client().request(
                method, self._base + target, headers=sent, data=body or None
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise ForwardFailed(f"upstream {self._base} unreachable: {exc}") from exc
        return _AiohttpReply(response)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class LocalRouter(Protocol):
    """The router in this process, as the coordinator calls it (:class:`RouterApp`)."""

    async def handle_local(self, request: LocalRequest, send: Send) -> None: ...


class _LocalReply:
    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]],
        messages: asyncio.Queue[MutableMapping[str, Any]],
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
                return  # the router ended without finishing its body
            if body := message.get("body", b""):
                yield bytes(body)
            if not message.get("more_body", False):
                return

    async def aclose(self) -> None:
        self._gone.set()  # the router sees a caller that left, as from a client disconnect
        if not self._task.done():
            await asyncio.wait({self._task}, timeout=_CLOSE_SECONDS)
        if not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class RouterForwarder:
    """A :class:`Forwarder` that calls the router in this process: no loopback hop, the same
    streaming and the same disconnect semantics as over HTTP."""

    def __init__(self, router: LocalRouter) -> None:
        self._router = router

    async def open(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> ForwardedReply:
        messages: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
        gone = asyncio.Event()
        raw = [(k.lower().encode(), v.encode()) for k, v in headers if k.lower() not in HOP_BY_HOP]

        async def vanished() -> None:
            await gone.wait()

        async def run() -> None:
            try:
                request = LocalRequest(method, target, raw, body, vanished)
                await self._router.handle_local(request, messages.put)
            finally:
                await messages.put({"type": "sluiceway.router.done"})

        task = asyncio.create_task(run(), name=f"router {method} {target}")
        start = await messages.get()
        if start["type"] != "http.response.start":
            await asyncio.gather(task, return_exceptions=True)
            raise ForwardFailed(f"the in-process router answered nothing for {target}")
        status = int(start["status"])
        raw_out = start.get("headers", [])
        headers_out = [(bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in raw_out]
        return _LocalReply(status, headers_out, messages, task, gone)

    async def aclose(self) -> None:
        return None
