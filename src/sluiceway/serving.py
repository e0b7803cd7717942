"""Serving an ASGI app with uvicorn on a bound socket, for every sluiceway server.

Binding first lets ``--port 0`` pick a free port and announce it (``listening <name> <url>``)
before requests arrive; the server leaves signal handling to its owner, which drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Generator

import uvicorn
from starlette.types import ASGIApp

from sluiceway.ports import PortAnnouncer

__all__ = ["RunningServer", "bind", "start_server", "stop_on_signals"]


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to its owner."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def bind(host: str, port: int) -> socket.socket:
    """A listening, non-blocking TCP socket (``port`` 0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: without it, a response written in two parts waits for the
    # client's delayed ACK (about 40 ms per keep-alive request on the default asyncio loop).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class RunningServer:
    """A started server: its URL, and :meth:`stop` to close it."""

    def __init__(self, server: _QuietServer, task: asyncio.Task[None], url: str) -> None:
        self._server = server
        self._task = task
        self.url = url

    async def stop(self) -> None:
        self._server.should_exit = True
        await asyncio.gather(self._task, return_exceptions=True)


async def start_server(
    app: ASGIApp,
    *,
    name: str,
    host: str = "127.0.0.1",
    port: int = 0,
    announcer: PortAnnouncer | None = None,
    graceful_timeout: float | None = None,
) -> RunningServer:
    """Bind, announce and start serving ``app``; returns once the socket listens.

    ``graceful_timeout``: wall seconds open requests get to finish when stopped (None: wait).
    """
    sock = bind(host, port)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_keep_alive=75,
        timeout_graceful_shutdown=None if graceful_timeout is None else round(graceful_timeout),
    )
    server = _QuietServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name=f"serve-{name}")
    url = f"http://{host}:{sock.getsockname()[1]}"
    if announcer is not None:
        announcer.announce(name, url)
    return RunningServer(server, task, url)


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (the owner drains, then stops its servers)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop
