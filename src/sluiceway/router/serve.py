"""The long-running form of the router behind ``sluiceway router``.

Serves the app on uvicorn (uvloop, httptools), announces ``listening router <url>``, keeps the
objectives current (file watch or Kubernetes watch), scrapes the endpoints' load every
``metrics_scrape_interval`` (:mod:`sluiceway.router.load_scraper`) and drains on SIGTERM /
SIGINT: a mounted coordinator answers its held waits 202 at once, the port stops answering
ready, queued requests get 503 ``rejected-shutting-down``, running streams get
``--drain-timeout`` to finish.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sluiceway.ports import PortAnnouncer
from sluiceway.router.app import RouterApp
from sluiceway.router.load_scraper import measure_pool
from sluiceway.serving import start_server, stop_on_signals

__all__ = ["Listen", "serve_router"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Listen:
    host: str = "127.0.0.1"
    port: int = 8081
    ports_file: Path | None = None


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
    scraper = measure_pool(gateway)
    await gateway.start()
    announcer = PortAnnouncer(listen.ports_file)
    server = await start_server(
        app,
        name="router",
        host=listen.host,
        port=listen.port,
        announcer=announcer,
    )
    if on_bound is not None:
        on_bound(server.url)
    tasks = [asyncio.create_task(job()) for job in background or []]
    if scraper is not None:
        tasks.append(asyncio.create_task(scraper.run()))
    try:
        await stop.wait()
        log.info("stop requested: draining")
        await app.drain()
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.stop()
        await gateway.aclose()
