"""The long-running form of the router behind ``sluiceway router``.

Serves the app on uvicorn (uvloop, httptools), announces ``listening router <url>``, keeps the
objectives current (file watch or Kubernetes watch) and drains on SIGTERM / SIGINT: the port
stops answering ready, queued requests get 503 ``rejected-shutting-down``, running streams get
``--drain-timeout`` to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from sluiceway.ports import PortAnnouncer
from sluiceway.router.app import RouterApp

__all__ = ["Listen", "serve_router"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Listen:
    host: str = "127.0.0.1"
    port: int = 8081
    ports_file: Path | None = None


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers (the router drains first)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def serve_router(
    app: RouterApp,
    listen: Listen,
    *,
    stop: asyncio.Event | None = None,
    background: list[Callable[[], Coroutine[Any, Any, None]]] | None = None,
    on_bound: Callable[[str], None] | None = None,
) -> None:
    """Serve until ``stop`` (default: SIGTERM / SIGINT), then drain and return."""
    stop = stop or stop_on_signals()
    gateway = app.gateway
    await gateway.start()
    sock = _bind(listen.host, listen.port)
    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=None
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    url = f"http://{listen.host}:{sock.getsockname()[1]}"
    PortAnnouncer(listen.ports_file).announce("router", url)
    if on_bound is not None:
        on_bound(url)
    tasks = [asyncio.create_task(job()) for job in background or []]
    try:
        await stop.wait()
        log.info("stop requested: draining")
        await gateway.drain()
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        server.should_exit = True
        await asyncio.gather(task, return_exceptions=True)
        await gateway.aclose()
