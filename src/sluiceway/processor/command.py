"""``sluiceway processor``, ``sluiceway publish`` and ``sluiceway results``.

``processor`` takes llm-d-async's flags (docs/configuration.md) plus sluiceway's (``--config``,
``--gate-wait-timeout``, ``--time-scale``, ``--port``). ``publish`` writes exactly the guide's
``publish()`` entries; ``results`` reads a result list.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from sluiceway.errors import ConfigError, SluicewayError
from sluiceway.options import PortsFile, TimeAnchor, TimeScale, make_clock

__all__ = ["guide_member", "register"]

Opt = typer.Option
Duration = Annotated[str | None, Opt(help="Go duration, e.g. 5m, 30s.")]


def register(app: typer.Typer) -> None:
    """Add ``processor``, ``publish`` and ``results``."""
    app.command(
        "processor",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(processor)
    app.command("publish")(publish)
    app.command("results")(results)


def _seconds(value: str | None, flag: str) -> float | None:
    from sluiceway.config.quantities import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ConfigError(str(exc), field=flag) from None


def _fail(exc: SluicewayError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(2)


def processor(
    ctx: typer.Context,
    transport: Annotated[str | None, Opt("--transport")] = None,
    transport_config: Annotated[str | None, Opt("--transport-config")] = None,
    transport_config_file: Annotated[Path | None, Opt("--transport-config-file")] = None,
    transport_config_watch_interval: Annotated[
        str | None, Opt("--transport-config-watch-interval")
    ] = None,
    pool_config_file: Annotated[Path | None, Opt("--pool-config-file")] = None,
    request_merge_policy_config_file: Annotated[
        Path | None, Opt("--request-merge-policy-config-file", "--request-merge-policy-config")
    ] = None,
    config: Annotated[Path | None, Opt("--config", help="Helm values (ap.*) file.")] = None,
    concurrency: Annotated[int | None, Opt("--concurrency", min=1)] = None,
    request_timeout: Annotated[str | None, Opt("--request-timeout")] = None,
    drain_timeout: Annotated[str | None, Opt("--drain-timeout")] = None,
    gate_wait_timeout: Annotated[str | None, Opt("--gate-wait-timeout")] = None,
    prometheus_url: Annotated[str | None, Opt("--prometheus-url")] = None,
    prometheus_cache_ttl: Annotated[str | None, Opt("--prometheus-cache-ttl")] = None,
    metrics_backlog_poll_interval: Annotated[
        str | None, Opt("--metrics-backlog-poll-interval", help="Default 15s; 0 disables.")
    ] = None,
    metrics_port: Annotated[int | None, Opt("--metrics-port", min=0)] = None,
    health_port: Annotated[int | None, Opt("--health-port", min=0)] = None,
    port: Annotated[int | None, Opt("--port", min=0, help="Serve every endpoint here.")] = None,
    host: Annotated[str, Opt("--host")] = "127.0.0.1",
    ports_file: PortsFile = None,
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
    log_level: Annotated[str, Opt("--log-level", help="debug | info | warning | error")] = "info",
) -> None:
    """Run the async processor (a drop-in for llm-d-async)."""
    level = log_level.upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise _fail(ConfigError(f"unknown log level {log_level!r}", field="--log-level"))
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from sluiceway.config.flags import check_upstream_flags
    from sluiceway.config.settings import load_processor_settings
    from sluiceway.processor.legacy_flags import parse_legacy_flags
    from sluiceway.processor.serve import Endpoints, run_processor
    from sluiceway.processor.specs import DEFAULT_BACKLOG_INTERVAL

    try:
        legacy = parse_legacy_flags(ctx.args)
        new_surface = config is not None or any(
            flag is not None
            for flag in (
                transport,
                transport_config,
                transport_config_file,
                transport_config_watch_interval,
            )
        )
        for warning in legacy.warnings(new_surface=new_surface):
            typer.echo(f"warning: {warning}", err=True)
        translated = None if new_surface else legacy.transport()
        if translated is not None:
            transport, transport_config = translated
        for warning in check_upstream_flags(legacy.rest):
            typer.echo(f"warning: {warning}", err=True)
        backlog = _seconds(metrics_backlog_poll_interval, "--metrics-backlog-poll-interval")
        overrides: dict[str, Any] = {
            "concurrency": concurrency,
            "request_timeout": _seconds(request_timeout, "--request-timeout"),
            "drain_timeout": _seconds(drain_timeout, "--drain-timeout"),
            "gate_wait_timeout": _seconds(gate_wait_timeout, "--gate-wait-timeout"),
            "prometheus_url": prometheus_url,
            "prometheus_cache_ttl": _seconds(prometheus_cache_ttl, "--prometheus-cache-ttl"),
            "metrics_port": metrics_port,
            "health_port": health_port,
            "transport_config_watch_interval": _seconds(
                transport_config_watch_interval, "--transport-config-watch-interval"
            ),
        }
        loaded = load_processor_settings(
            config_file=config,
            transport=transport,
            transport_config=transport_config,
            transport_config_file=transport_config_file,
            pool_config_file=pool_config_file,
            request_merge_policy_config_file=request_merge_policy_config_file,
            overrides=overrides,
        )
        for warning in loaded.warnings:
            typer.echo(f"warning: {warning}", err=True)
        settings = loaded.value
        endpoints = Endpoints(
            host=host,
            port=port,
            health_port=settings.health_port,
            metrics_port=settings.metrics_port,
            ports_file=ports_file,
        )
        services = {
            "prometheus_url": settings.prometheus_url,
            "prometheus_cache_ttl": settings.prometheus_cache_ttl,
        }
        clock = make_clock(time_scale, time_anchor)
        run = run_processor(
            settings,
            clock=clock,
            endpoints=endpoints,
            services=services,
            backlog_interval=DEFAULT_BACKLOG_INTERVAL if backlog is None else backlog,
        )
        asyncio.run(run)
    except SluicewayError as exc:
        raise _fail(exc) from None


# -- producer commands ------------------------------------------------------------------------


def guide_member(team: str, run: str, index: int, *, now: int, deadline: int, model: str) -> str:
    """One entry exactly as the guide's ``publish()`` shell function writes it."""
    data = {
        "id": f"{team}-{run}-{index:04d}",
        "created": now,
        "deadline": deadline,
        "payload": {"model": model, "prompt": "summarize this", "max_tokens": 64},
        "metadata": {"team": team},
    }
    entry = {"internal": {}, "request_kind": "plain", "data": data}
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


Transport = Annotated[str, Opt("--transport", help="redis-sortedset, sqlite or postgres.")]
Url = Annotated[
    str | None,
    Opt("--url", help="Redis URL (default $REDIS_URL), SQLite path or PostgreSQL DSN."),
]


async def _open(transport: str, url: str | None) -> Any:
    from sluiceway.broker import open_broker
    from sluiceway.broker.base import BrokerOptions

    if transport == "memory":
        raise ConfigError("the memory transport lives inside one process", field="--transport")
    env_url = "DATABASE_URL" if transport == "postgres" else "REDIS_URL"
    address = url or os.environ.get(env_url) or None
    return await open_broker(transport, BrokerOptions(url=address))


def publish(
    team: Annotated[str, typer.Argument(help="Team name (metadata.team).")],
    count: Annotated[int, typer.Argument(min=1)] = 1,
    queue: Annotated[str | None, Opt("--queue", help="Default: team-<TEAM>.")] = None,
    ttl: Annotated[int, Opt("--ttl", min=1, help="Seconds until the deadline.")] = 300,
    model: Annotated[str, Opt("--model", envvar="MODEL")] = "Qwen/Qwen3-32B",
    transport: Transport = "redis-sortedset",
    url: Url = None,
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
) -> None:
    """Publish COUNT requests for TEAM, as the guide's publish() does; prints the count.

    With ``--time-scale``, give the processor's ``--time-anchor`` so both agree on "now".
    """
    clock = make_clock(time_scale, time_anchor)

    async def run() -> int:
        broker = await _open(transport, url)
        try:
            now = int(clock.now())
            deadline = now + ttl
            run_id = f"{now}-{os.getpid() % 32768}"
            entries = [
                (guide_member(team, run_id, i, now=now, deadline=deadline, model=model), deadline)
                for i in range(1, count + 1)
            ]
            return int(await broker.enqueue(queue or f"team-{team}", entries))
        finally:
            await broker.aclose()

    try:
        typer.echo(asyncio.run(run()))
    except SluicewayError as exc:
        raise _fail(exc) from None


def results(
    result_queue: Annotated[
        str, Opt("--result-queue", help="The guide uses results-list.")
    ] = "result-list",
    follow: Annotated[bool, Opt("--follow", help="Keep waiting for new results.")] = False,
    wait: Annotated[float, Opt("--wait", help="Seconds to wait for each result.")] = 1.0,
    transport: Transport = "redis-sortedset",
    url: Url = None,
) -> None:
    """Print results (one JSON line each) from a result list, oldest first."""

    async def run() -> None:
        broker = await _open(transport, url)
        try:
            while True:
                raw = await broker.pop_result(result_queue, wait)
                if raw is None and not follow:
                    return
                if raw is not None:
                    typer.echo(json.dumps(json.loads(raw)))
        finally:
            await broker.aclose()

    try:
        asyncio.run(run())
    except SluicewayError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        pass
