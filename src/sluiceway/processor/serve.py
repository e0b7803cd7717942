"""The long-running form of the processor behind ``sluiceway processor``.

Opens the broker, starts the processor and its HTTP endpoints (``/healthz``, ``/readyz``,
``/metrics``), and drains on SIGTERM or SIGINT. Ports: ``--port P`` serves all endpoints on
one port; otherwise health and metrics get their own (upstream's 8081 / 9090). Any port may be
0 (a free one, announced as ``listening <name> <url>``). On a Redis broker the processor joins
its pools' replica sets (``sluiceway.ledger.membership``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette

from sluiceway.broker.base import Broker
from sluiceway.broker.redis import RedisBroker
from sluiceway.clock import Clock
from sluiceway.config.processor import TransportConfig
from sluiceway.config.processor_settings import ProcessorSettings as ProcessorConfig
from sluiceway.gates.context import REDIS_GATES_SERVICE
from sluiceway.ledger.membership import ReplicaMembership
from sluiceway.ports import PortAnnouncer
from sluiceway.processor.build import open_backend, queue_spec, runtime_settings
from sluiceway.processor.http_app import health_app
from sluiceway.processor.reload import watch_transport_config
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import DEFAULT_BACKLOG_INTERVAL
from sluiceway.serving import RunningServer, start_server

__all__ = ["Endpoints", "StopSignals", "run_processor"]

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


@contextlib.asynccontextmanager
async def _serving(app: Starlette, endpoints: Endpoints) -> AsyncIterator[None]:
    """Serve ``app`` on every binding of ``endpoints`` until the block ends (or raises)."""
    announcer = PortAnnouncer(endpoints.ports_file)
    servers: list[RunningServer] = []
    try:
        for name, port in endpoints.bindings().items():
            server = await start_server(
                app, name=name, host=endpoints.host, port=port, announcer=announcer
            )
            servers.append(server)
        yield
    finally:
        await asyncio.gather(*(server.stop() for server in servers))


class StopSignals:
    """SIGTERM / SIGINT: the first asks for a drain (``drain``), a second one during the
    drain for a fast stop (``force``): in-flight calls aborted, their entries returned."""

    def __init__(self) -> None:
        self.drain = asyncio.Event()
        self.force = asyncio.Event()

    def received(self) -> None:
        if self.drain.is_set():
            log.warning("second stop signal: forcing a fast stop")
            self.force.set()
        self.drain.set()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.received)


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
    force: asyncio.Event | None = None,
    backlog_interval: float = DEFAULT_BACKLOG_INTERVAL,
) -> None:
    """Run until SIGTERM / SIGINT (or ``stop`` is set), then drain and exit; a second signal
    (or ``force``) during the drain stops at once. Whatever fails on the way, the HTTP servers
    stop and the broker closes."""
    signals = StopSignals()
    if stop is None:
        signals.install()
    else:
        signals.drain, signals.force = stop, force or signals.force
    async with contextlib.AsyncExitStack() as stack:
        backend = await open_backend(config, time_scale=clock.scale, clock=clock)
        stack.push_async_callback(backend.aclose)
        processor = Processor(
            runtime_settings(config, backlog_interval=backlog_interval),
            backend.broker,
            clock=clock,
            quota_store=backend.quota_stores,
            services={REDIS_GATES_SERVICE: backend.redis_gates, **(services or {})},
            membership=_membership(backend.broker, clock),
        )
        app = health_app(
            ready=lambda: processor.ready,
            ping=backend.broker.ping,
            registry=processor.metrics.registry,
        )
        await stack.enter_async_context(_serving(app, endpoints))
        await processor.start()
        stack.push_async_callback(processor.stop)  # a no-op after the drain below
        stack.push_async_callback(_cancel, _watch(config, processor, clock))
        forward = asyncio.create_task(_forward_force(signals.force, processor), name="force-stop")
        stack.push_async_callback(_cancel, forward)
        await signals.drain.wait()
        log.info("stop requested: draining")
        await processor.stop()


def _membership(broker: Broker, clock: Clock) -> ReplicaMembership | None:
    """Membership of the pools' replica sets on a Redis broker. Elsewhere none: SQLite and
    memory serve one processor; PostgreSQL and Pub/Sub processors keep per-process targets."""
    if not isinstance(broker, RedisBroker):
        return None
    return ReplicaMembership(broker.client, clock)


async def _forward_force(force: asyncio.Event, processor: Processor) -> None:
    await force.wait()
    processor.force_stop()


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is None:
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
