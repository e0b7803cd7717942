"""``sluiceway coordinator``: the HTTP front door (passthrough, wait, enqueue)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sluiceway.clock import Clock
from sluiceway.errors import SluicewayError
from sluiceway.options import (
    AccessLogSample,
    LogFormat,
    LogLevel,
    Port,
    PortsFile,
    TimeAnchor,
    TimeScale,
    make_clock,
)

if TYPE_CHECKING:
    from sluiceway.observability.tracing import Tracing

__all__ = ["register"]

log = logging.getLogger(__name__)
_MIB = 1024 * 1024


def register(app: typer.Typer) -> None:
    """Add ``coordinator``."""
    app.command("coordinator")(coordinator)


@dataclass(frozen=True)
class _Serving:
    host: str
    port: int
    max_body_bytes: int
    drain_timeout: float
    ports_file: Path | None
    access_sample: float = 0.0
    tracing: Tracing | None = None


def coordinator(
    config: Annotated[
        Path,
        typer.Option(
            "--config", help="Coordinator config file, YAML or JSON (required, no default)."
        ),
    ],
    port: Port = 8080,
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = ("127.0.0.1"),
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", min=1, help="Largest request body; 413 above.")
    ] = 10 * _MIB,
    drain_timeout: Annotated[
        float, typer.Option("--drain-timeout", min=0, help="Wall seconds streams get on SIGTERM.")
    ] = 25.0,
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
    ports_file: PortsFile = None,
    log_level: LogLevel = "info",
    log_format: LogFormat = "text",
    access_log_sample: AccessLogSample = 1.0,
) -> None:
    """Serve the coordinator that CONFIG describes."""
    from sluiceway.config.command import error_line
    from sluiceway.config.coordinator import load_coordinator_config
    from sluiceway.config.documents import read_document
    from sluiceway.observability.logging import configure_logging
    from sluiceway.observability.request_observer import observe_process

    try:
        configure_logging(log_level, log_format)
        tracing = observe_process("sluiceway-coordinator", log_format, access_log_sample)
        serving = _Serving(
            host, port, max_body_bytes, drain_timeout, ports_file, access_log_sample, tracing
        )
        loaded = load_coordinator_config(read_document(config))
        for warning in loaded.warnings:
            log.warning("%s: %s", config, warning)
        asyncio.run(_run(loaded.value, make_clock(time_scale, time_anchor), serving))
    except SluicewayError as exc:
        typer.echo(error_line(config, exc), err=True)
        raise typer.Exit(2) from None


async def _run(config: object, clock: Clock, serving: _Serving) -> None:
    from sluiceway.config.coordinator import CoordinatorConfig
    from sluiceway.coordinator.observed import observed_app
    from sluiceway.coordinator.server import open_coordinator
    from sluiceway.ports import PortAnnouncer
    from sluiceway.serving import start_server, stop_on_signals

    assert isinstance(config, CoordinatorConfig)
    stop = stop_on_signals()
    async with open_coordinator(
        config, clock=clock, max_body_bytes=serving.max_body_bytes
    ) as front:
        app = observed_app(
            front, config.broker, access_sample=serving.access_sample, tracing=serving.tracing
        )
        server = await start_server(
            app,
            name="coordinator",
            host=serving.host,
            port=serving.port,
            announcer=PortAnnouncer(serving.ports_file),
            graceful_timeout=serving.drain_timeout,
        )
        await stop.wait()
        log.info(
            "stop requested: held connections answered 202, streams get %.0f s",
            serving.drain_timeout,
        )
        front.begin_drain()
        await server.stop()
