"""A PostgreSQL connection cut mid-run: one warning line, no driver traceback, nothing lost.

The cut is made by a loopback TCP proxy between the broker and the private server: it drops
every live link and refuses new ones for a while, as a network partition or a server restart
looks from the client, without touching the server other tests use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.postgres import open_postgres_broker

OUTAGE_SECONDS = 1.5  # longer than asyncpg's own 1 s retry of a lost pool connection


class Proxy:
    """Forwards loopback TCP to ``port``; :meth:`cut` drops every link, ``down`` refuses new."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._links: list[asyncio.StreamWriter] = []
        self.down = False

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[int]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        try:
            yield int(server.sockets[0].getsockname()[1])
        finally:
            server.close()
            self.cut()
            await server.wait_closed()

    def cut(self) -> None:
        for writer in self._links:
            writer.transport.abort()
        self._links.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.transport.abort()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._port)
        self._links += [writer, up_writer]
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.transport.abort()


def through(dsn: str, port: int) -> str:
    parts = urlsplit(dsn)
    netloc = f"{parts.username}@127.0.0.1:{port}" if parts.username else f"127.0.0.1:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


async def test_a_cut_connection_is_one_warning_line_and_no_traceback(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = Proxy(urlsplit(postgres_dsn).port or 5432)
    caplog.set_level(logging.DEBUG)
    async with proxy.running() as port:
        broker = await open_postgres_broker(BrokerOptions(url=through(postgres_dsn, port)))
        try:
            await broker.enqueue("q", [("kept", 1.0)])
            assert not await broker.wait_for_result("results:x", 0.05)  # LISTEN is up
            proxy.down = True
            proxy.cut()
            statements = asyncio.gather(broker.backlog("q"), broker.peek_result("results:x"))
            await asyncio.sleep(OUTAGE_SECONDS)
            proxy.down = False
            assert await asyncio.wait_for(statements, 30) == [1, None]
            assert await broker.backlog("q") == 1  # nothing lost
        finally:
            await broker.aclose()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage().split(" (")[0] for r in warnings] == [
        "lost the PostgreSQL connection to 127.0.0.1:" + str(port) + urlsplit(postgres_dsn).path
    ]
    assert "terminate()" not in warnings[0].getMessage()  # the cause, not a follow-up error
    assert [r.name for r in caplog.records if r.exc_info] == []
    assert not any("Traceback" in r.getMessage() for r in caplog.records)
