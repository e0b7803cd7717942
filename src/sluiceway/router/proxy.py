"""The upstream call: forward the request to one endpoint and relay its answer as it comes.

Raw ASGI ``send`` is used so the router controls the first byte: the response head goes out
when upstream's head arrives, every complete SSE event as soon as it is read. A non-streamed
answer is relayed whole (it is one JSON document). A stream that stops without its terminal
event raises :class:`StreamCut`: the caller ends it with an error event, never as if complete.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiohttp

from sluiceway.router.exchange import Exchange
from sluiceway.router.sse import SseRelay, usage_from_body

__all__ = ["Send", "StreamCut", "forward_headers", "relay"]

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

# Hop-by-hop and recomputed headers: never forwarded either way.
_SKIP_REQUEST = frozenset(
    {
        b"host",
        b"content-length",
        b"connection",
        b"keep-alive",
        b"transfer-encoding",
        b"te",
        b"upgrade",
        b"proxy-connection",
        b"accept-encoding",
    }
)
_SKIP_RESPONSE = frozenset(
    {
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-encoding",
        "date",
        "server",
    }
)
_EVENT_STREAM = "text/event-stream"


class StreamCut(Exception):
    """The model server ended a stream without ``data: [DONE]`` or an error event."""


def forward_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Request headers for upstream (hop-by-hop ones dropped)."""
    return {n.decode("latin-1"): v.decode("latin-1") for n, v in raw if n not in _SKIP_REQUEST}


def _response_head(resp: aiohttp.ClientResponse) -> list[tuple[bytes, bytes]]:
    return [
        (k.lower().encode("latin-1"), v.encode("latin-1"))
        for k, v in resp.headers.items()
        if k.lower() not in _SKIP_RESPONSE
    ]


async def relay(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    headers: dict[str, str],
    ex: Exchange,
    send: Send,
    *,
    strip_usage: bool,
    limit: aiohttp.ClientTimeout,
) -> None:
    """POST ``body`` to ``url`` and relay the answer; records usage on ``ex``."""
    async with session.post(url, data=body, headers=headers, timeout=limit) as resp:
        head = _response_head(resp)
        streaming = resp.status == 200 and resp.content_type == _EVENT_STREAM
        if not streaming:
            data = await resp.read()
            if resp.status == 200:
                ex.usage = usage_from_body(data)
            head.append((b"content-length", str(len(data)).encode()))
            ex.complete = True
            ex.started = True
            await send({"type": "http.response.start", "status": resp.status, "headers": head})
            await send({"type": "http.response.body", "body": data})
            return
        ex.started = True
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await _stream(resp, ex, send, SseRelay(strip_usage=strip_usage))


async def _stream(resp: aiohttp.ClientResponse, ex: Exchange, send: Send, sse: SseRelay) -> None:
    async for data in resp.content.iter_any():
        out = sse.feed(data)
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
    ex.usage = sse.usage
    tail = sse.flush()
    if not sse.ended:  # a partial last event is dropped: the client gets the error event whole
        raise StreamCut("the stream ended without its terminal event")
    ex.complete = True
    await send({"type": "http.response.body", "body": tail})
