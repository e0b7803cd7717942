"""Where passthrough requests go: the router (or a model server) behind the coordinator.

:class:`Gateway` is the seam: :class:`HttpGateway` calls it over HTTP with keep-alive
connections (aiohttp); a process that also runs the router can hand in an in-process upstream
instead, so passthrough costs no loopback hop. A reply streams: its first chunk is forwarded
before the upstream has finished, and closing it early aborts the upstream call, so a model
server frees the slot of a client that went away.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Final, Protocol

import aiohttp

from sluiceway.errors import SluicewayError

__all__ = ["HOP_BY_HOP", "Gateway", "GatewayReply", "GatewayUnavailable", "HttpGateway"]

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


class GatewayUnavailable(SluicewayError):
    """The upstream could not be reached (connection refused, reset, timed out)."""


class GatewayReply(Protocol):
    """A streamed upstream answer; always :meth:`aclose` it."""

    status: int
    headers: list[tuple[str, str]]

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class Gateway(Protocol):
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


class HttpGateway:
    """An :class:`Gateway` at ``base_url`` over one keep-alive connection pool."""

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
