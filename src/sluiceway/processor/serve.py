"""The long-running form of the processor behind ``sluiceway processor``.

Opens the broker, starts the processor and its HTTP endpoints (``/healthz``, ``/readyz``,
``/metrics``), and drains on SIGTERM or SIGINT. Ports: ``--port P`` serves all endpoints on
one port; otherwise health and metrics get their own (upstream's 8081 / 9090). Any port may be
0 (a free one, announced as ``listening <name> <url>``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.applications import Starlette

from sluiceway.clock import Clock
from sluiceway.config.processor import TransportConfig
from sluiceway.config.settings import ProcessorSettings as ProcessorConfig
from sluiceway.ports import PortAnnouncer
from sluiceway.processor.app import Processor
from sluiceway.processor.build import open_backend, queue_spec, runtime_settings
from sluiceway.processor.health import health_app
from sluiceway.processor.reload import watch_transport_config

__all__ = ["Endpoints", "run_processor"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Endpoints:
    """Where to serve: ``port`` (all routes on one port) or separate health/metrics ports."""

    host: str = "127.0.0.1"
    port: int | None = None
    health_port: int = 8081
    metrics_port: int = 9090
    ports_file: Path | None = None

    def bindings(self) -> dict[str, int]:
        """Server name -> port to bind."""
        if self.port is not None:
            return {"processor": self.port}
        if self.health_port == self.metrics_port and self.health_port != 0:
            return {"processor": self.health_port}
        return {"health": self.health_port, "metrics": self.metrics_port}


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the processor."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def _serve(
    app: Starlette, endpoints: Endpoints
) -> tuple[list[_QuietServer], list[asyncio.Task[None]]]:
    announcer = PortAnnouncer(endpoints.ports_file)
    servers: list[_QuietServer] = []
    tasks: list[asyncio.Task[None]] = []
    for name, port in endpoints.bindings().items():
        sock = _bind(endpoints.host, port)
        server = _QuietServer(uvicorn.Config(app, log_level="warning", lifespan="off"))
        servers.append(server)
        tasks.append(asyncio.create_task(server.serve(sockets=[sock])))
        bound = sock.getsockname()[1]
        announcer.announce(name, f"http://{endpoints.host}:{bound}")
    return servers, tasks


def _stop_signal() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def _watch(
    config: ProcessorConfig, processor: Processor, clock: Clock
) -> asyncio.Task[None] | None:
    """The hot-reload task when ``--transport-config-watch-interval`` is set."""
    path = config.transport_config_file
    if config.transport_config_watch_interval <= 0 or path is None:
        return None

    async def apply(wanted: TransportConfig) -> None:
        queues = tuple(queue_spec(q, i) for i, q in enumerate(wanted.queues))
        await processor.reconfigure(queues)

    watch = watch_transport_config(
        path,
        config.transport_config,
        interval=config.transport_config_watch_interval,
        clock=clock,
        apply=apply,
    )
    return asyncio.create_task(watch, name="config-watch")


async def run_processor(
    config: ProcessorConfig,
    *,
    clock: Clock,
    endpoints: Endpoints,
    services: Mapping[str, object] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Run until SIGTERM / SIGINT (or ``stop`` is set), then drain and exit."""
    stop = stop or _stop_signal()
    backend = await open_backend(config, time_scale=clock.scale, clock=clock)
    try:
        processor = Processor(
            runtime_settings(config),
            backend.broker,
            clock=clock,
            quota_store=backend.quota_stores,
            services=services,
        )
        app = health_app(
            ready=lambda: processor.ready,
            ping=backend.broker.ping,
            registry=processor.metrics.registry,
        )
        servers, tasks = await _serve(app, endpoints)
        await processor.start()
        watcher = _watch(config, processor, clock)
        await stop.wait()
        log.info("stop requested: draining")
        if watcher is not None:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        await processor.stop()
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await backend.aclose()
