"""``sluiceway processor``: the async processor, a drop-in for llm-d-async.

It takes llm-d-async's flags (docs/configuration.md; the deprecated ones of upstream's chart are
translated with a warning) plus sluiceway's (``--config``, ``--gate-wait-timeout``,
``--time-scale``, ``--port``, ``--wait-for-broker``, ``--log-format``). ``publish``,
``results``, ``cancel`` live in :mod:`sluiceway.cli_requests`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import Field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sluiceway.errors import ConfigError, SluicewayError
from sluiceway.options import LogFormat, LogLevel, PortsFile, TimeAnchor, TimeScale, make_clock

if TYPE_CHECKING:
    from sluiceway.config.processor_settings import ProcessorSettings
    from sluiceway.processor.serve import Endpoints

__all__ = ["register"]

log = logging.getLogger(__name__)

Opt = typer.Option
NoDefault = {"show_default": False}


def register(app: typer.Typer) -> None:
    """Add ``processor``."""
    app.command(
        "processor",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(_with_setting_flags(processor))


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


def _opt(*names: str, help: str, **kw: Any) -> Any:
    return Opt(*names, help=help, **{**NoDefault, **kw})


def processor(
    ctx: typer.Context,
    transport: Annotated[
        str | None,
        _opt(
            "--transport",
            help="redis-sortedset, postgres, gcp-pubsub, sqlite or memory "
            "(default: redis-sortedset).",
        ),
    ] = None,
    transport_config: Annotated[
        str | None, _opt("--transport-config", help="Transport config as JSON (default: none).")
    ] = None,
    transport_config_file: Annotated[
        Path | None,
        _opt("--transport-config-file", help="Transport config file, JSON (default: none)."),
    ] = None,
    pool_config_file: Annotated[
        Path | None,
        _opt("--pool-config-file", help="Worker pools file, JSON (default: one default pool)."),
    ] = None,
    request_merge_policy_config_file: Annotated[
        Path | None,
        _opt(
            "--request-merge-policy-config-file",
            "--request-merge-policy-config",
            help="Merge policy file, JSON (default: random-robin).",
        ),
    ] = None,
    config: Annotated[
        Path | None, _opt("--config", help="Helm values file (ap.* keys) (default: none).")
    ] = None,
    metrics_backlog_poll_interval: Annotated[
        str | None,
        _opt(
            "--metrics-backlog-poll-interval",
            help="Read the backlog gauges this often, 0 disables (default: 15s).",
        ),
    ] = None,
    port: Annotated[
        int | None,
        _opt("--port", min=0, max=65535, help="Serve every endpoint on this port (default: off)."),
    ] = None,
    host: Annotated[str, Opt("--host", help="Address the endpoints bind to.")] = "127.0.0.1",
    ports_file: PortsFile = None,
    wait_for_broker: Annotated[
        float,
        Opt("--wait-for-broker", min=0, help="Wall seconds to wait for the broker at start-up."),
    ] = 0.0,
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
    log_level: LogLevel = "info",
    log_format: LogFormat = "text",
    **settings: Any,
) -> None:
    """Run the async processor (a drop-in for llm-d-async)."""
    from sluiceway.config.flags import check_upstream_flags
    from sluiceway.config.processor_settings import load_processor_settings
    from sluiceway.observability.logging import configure_logging
    from sluiceway.processor.legacy_flags import parse_legacy_flags

    try:
        configure_logging(log_level, log_format)
        legacy = parse_legacy_flags(ctx.args)
        new_surface = config is not None or any(
            flag is not None
            for flag in (
                transport,
                transport_config,
                transport_config_file,
                settings.get("transport_config_watch_interval"),
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
        overrides = _overrides(settings)
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
        endpoints = _endpoints(loaded.value, host=host, port=port, ports_file=ports_file)
        clock = make_clock(time_scale, time_anchor)
        asyncio.run(_run(loaded.value, endpoints, clock, wait_for_broker, backlog))
    except SluicewayError as exc:
        raise _fail(exc) from None


def _overrides(given: dict[str, Any]) -> dict[str, Any]:
    """The scalar settings given as flags, durations parsed to seconds (None: not given)."""
    from sluiceway.config.processor_settings import flag_of, scalar_settings

    out: dict[str, Any] = {}
    for setting in scalar_settings():
        flag, value = flag_of(setting), given.get(setting.name)
        out[setting.name] = _seconds(value, flag.option(setting.name)) if flag.duration else value
    return out


def _setting_option(setting: Field[Any]) -> Any:
    """The typer annotation of one scalar setting's flag, from its declaration."""
    from sluiceway.config.processor_settings import flag_of

    flag = flag_of(setting)
    text = f"{flag.help.rstrip('.')} (default: {flag.shown})."
    if isinstance(setting.default, bool):
        name = flag.option(setting.name)
        return Annotated[bool | None, _opt(f"{name}/--no-{name[2:]}", help=text)]
    if flag.duration or isinstance(setting.default, str):
        return Annotated[str | None, _opt(flag.option(setting.name), help=text)]
    bounds = {"min": flag.minimum, "max": flag.maximum}
    limits = {k: v for k, v in bounds.items() if v is not None}
    kind = float if isinstance(setting.default, float) else int
    return Annotated[kind | None, _opt(flag.option(setting.name), help=text, **limits)]


def _with_setting_flags(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` one option per scalar setting of the processor's configuration, so a
    setting is declared once (its field) and its flag follows."""
    from sluiceway.config.processor_settings import scalar_settings

    signature = inspect.signature(command, eval_str=True)
    names = {s.name for s in scalar_settings()}  # registering twice adds nothing twice
    fixed = [
        p
        for p in signature.parameters.values()
        if p.kind is not p.VAR_KEYWORD and p.name not in names
    ]
    extra = [
        inspect.Parameter(
            s.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_setting_option(s)
        )
        for s in scalar_settings()
    ]
    command.__signature__ = signature.replace(parameters=[*fixed, *extra])  # type: ignore[attr-defined]
    command.__annotations__ = {
        **{p.name: p.annotation for p in fixed},
        **{p.name: p.annotation for p in extra},
        "return": None,
    }
    return command


def _endpoints(
    settings: ProcessorSettings, *, host: str, port: int | None, ports_file: Path | None
) -> Endpoints:
    """The endpoints to serve, each port checked free first (one error line naming the flag)."""
    from sluiceway.ports import check_port_free
    from sluiceway.processor.serve import Endpoints

    endpoints = Endpoints(
        host=host,
        port=port,
        health_port=settings.health_port,
        metrics_port=settings.metrics_port,
        ports_file=ports_file,
    )
    # Without --port, a shared health and metrics port is bound once, as "processor".
    flags = {"processor": "--health-port", "health": "--health-port", "metrics": "--metrics-port"}
    for name, bound in endpoints.bindings().items():
        check_port_free(host, bound, flag="--port" if port is not None else flags[name])
    return endpoints


async def _run(
    settings: ProcessorSettings,
    endpoints: Endpoints,
    clock: Any,
    wait_for: float,
    backlog: float | None,
) -> None:
    from sluiceway.broker.wait import wait_for_broker
    from sluiceway.config.summary import broker_address, describe_processor
    from sluiceway.processor.build import open_backend
    from sluiceway.processor.serve import run_processor
    from sluiceway.processor.specs import DEFAULT_BACKLOG_INTERVAL

    for line in describe_processor(settings):
        log.info("%s", line)
    if wait_for > 0:
        await wait_for_broker(
            lambda: open_backend(settings, time_scale=clock.scale, clock=clock),
            within=wait_for,
            what=broker_address(settings),
        )
    services = {
        "prometheus_url": settings.prometheus_url,
        "prometheus_cache_ttl": settings.prometheus_cache_ttl,
    }
    await run_processor(
        settings,
        clock=clock,
        endpoints=endpoints,
        services=services,
        backlog_interval=DEFAULT_BACKLOG_INTERVAL if backlog is None else backlog,
    )
