"""Request limits over a real listener: a body over the limit is 413 (declared or counted), too
many or too large headers are 431, each in the OpenAI envelope, and none reaches the model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import orjson
from router_harness import body, running_router

from sluiceway.router.limits import RequestLimits

PLAIN = "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\n"


async def _raw_request(url: str, head: bytes, payload: bytes = b"") -> tuple[int, bytes]:
    """Send bytes as they are (aiohttp refuses to send what these tests need); the answer's
    status and body, within 10 s (a router that waits for the rest of a body fails here)."""
    return await asyncio.wait_for(_exchange(url, head, payload), 10)


async def _exchange(url: str, head: bytes, payload: bytes) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(head + payload)
        await writer.drain()
        status_line = await reader.readline()
        headers = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in headers.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        return int(status_line.split()[1]), await reader.readexactly(length)
    finally:
        writer.close()


def _head(path: str, fields: list[bytes], length: int | None = None) -> bytes:
    lines = [f"POST {path} HTTP/1.1".encode(), b"host: router", *fields]
    if length is not None:
        lines.append(b"content-length: %d" % length)
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def test_a_50_mb_body_is_413_before_it_is_read() -> None:
    async with running_router(PLAIN) as rig:
        head = _head("/v1/completions", [b"content-type: application/json"], 50 * 1024 * 1024)
        status, answer = await _raw_request(rig.url, head, b"{" * 65536)
        assert status == 413
        error = orjson.loads(answer)["error"]
        assert error["code"] == 413 and error["message"] == "request body over 10485760 bytes"
        assert rig.sim.engines[0].stats.finished == {}


async def test_a_chunked_body_is_counted_as_it_arrives() -> None:
    settings = {"limits": RequestLimits(body_bytes=4096)}
    async with running_router(PLAIN, settings=settings) as rig, aiohttp.ClientSession() as s:

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(8):
                yield b" " * 1024

        async with s.post(rig.url + "/v1/completions", data=chunks()) as r:
            assert r.status == 413
            assert (await r.json())["error"]["code"] == 413
        async with s.post(rig.url + "/v1/completions", json=body()) as r:
            assert r.status == 200


async def test_too_many_or_too_large_headers_are_431() -> None:
    async with running_router(PLAIN) as rig:
        many = [b"x-h%d: v" % i for i in range(10_000)]
        status, answer = await _raw_request(rig.url, _head("/v1/completions", many, 0))
        assert status == 431
        assert orjson.loads(answer)["error"]["message"] == "more than 100 header fields"
        big = [b"x-big: " + b"v" * (1024 * 1024)]
        status, answer = await _raw_request(rig.url, _head("/v1/completions", big, 0))
        assert status == 431 and orjson.loads(answer)["error"]["code"] == 431
        assert rig.sim.engines[0].stats.finished == {}
