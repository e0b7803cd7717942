"""``sluiceway router``: the OpenAI-compatible gateway with flow control.

sluiceway router --config EPP.yaml --endpoints URL[,URL...] (or --endpoints-file FILE,
                 --endpoints-dns http://NAME:PORT, --inference-pool NAME, --pod-selector k=v
                 --target-port P) --objectives FILE_OR_DIR --pool-name NAME --port P

Request limits (``--max-body-bytes``, ``--max-headers``, ``--max-header-bytes``,
``--max-headers-total-bytes``) guard the listener; with ``--coordinator-config`` the mounted
coordinator takes the same body limit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sluiceway.errors import ConfigError, SluicewayError
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
    from sluiceway.clock import Clock
    from sluiceway.config.coordinator import CoordinatorConfig
    from sluiceway.ledger.leases import LedgerSettings
    from sluiceway.router.app import RouterApp
    from sluiceway.router.objectives import ObjectiveTable
    from sluiceway.router.serve import Listen

__all__ = ["register"]

Opt = typer.Option
_KIB = 1024


def register(app: typer.Typer) -> None:
    """Add ``router``."""
    app.command("router")(router)


def _seconds(value: str, flag: str) -> float:
    from sluiceway.config.quantities import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ConfigError(str(exc), field=flag) from None


def router(
    config: Annotated[
        Path | None,
        Opt(
            "--config",
            help="EndpointPickerConfig, router values file or LLMInferenceService (default: none).",
        ),
    ] = None,
    endpoints: Annotated[
        str | None,
        Opt("--endpoints", help="Model server URLs, comma separated (default: none)."),
    ] = None,
    endpoints_file: Annotated[
        Path | None,
        Opt("--endpoints-file", help="File with one URL a line, watched (default: none)."),
    ] = None,
    endpoints_dns: Annotated[
        str | None,
        Opt(
            "--endpoints-dns",
            help="http://NAME:PORT, comma separated: every address of NAME (default: none).",
        ),
    ] = None,
    dns_interval: Annotated[
        str, Opt("--dns-interval", help="How often --endpoints-dns names are resolved.")
    ] = "5s",
    inference_pool: Annotated[
        str | None,
        Opt(
            "--inference-pool",
            help="Route to the ready Pods of this InferencePool (k8s extra; default: none).",
        ),
    ] = None,
    pod_selector: Annotated[
        str | None,
        Opt(
            "--pod-selector",
            help="Route to the ready Pods with these labels, k=v,k2=v2 (default: none).",
        ),
    ] = None,
    target_port: Annotated[
        int | None,
        Opt(
            "--target-port",
            min=1,
            max=65535,
            help="The model server port of --pod-selector (default: none).",
        ),
    ] = None,
    objectives: Annotated[
        Path | None,
        Opt("--objectives", help="InferenceObjective file or directory (default: none)."),
    ] = None,
    kube_objectives: Annotated[
        bool, Opt("--kube-objectives", help="Watch InferenceObjective resources (k8s extra).")
    ] = False,
    namespace: Annotated[
        str | None,
        Opt(
            "--namespace",
            help="Namespace to watch (default: objectives in all, Pods in the router's own).",
        ),
    ] = None,
    pool_name: Annotated[
        str | None,
        Opt(
            "--pool-name",
            help="Only objectives for this pool (default: --inference-pool's name, else all).",
        ),
    ] = None,
    drain_timeout: Annotated[
        str, Opt("--drain-timeout", help="On SIGTERM, time running streams get to finish.")
    ] = "30s",
    health_interval: Annotated[
        str, Opt("--health-interval", help="How often each endpoint's health is checked.")
    ] = "1s",
    models_interval: Annotated[
        str,
        Opt("--models-interval", help="How often each endpoint's /v1/models is read (0: on join)."),
    ] = "10s",
    prefix_affinity: Annotated[
        bool, Opt("--prefix-affinity", help="Prefer the endpoint that served a prompt's prefix.")
    ] = False,
    metrics_scrape_interval: Annotated[
        str,
        Opt(
            "--metrics-scrape-interval",
            help="Read each endpoint's load from its vLLM /metrics this often (0: the router's "
            "own counts only).",
        ),
    ] = "100ms",
    ledger: Annotated[
        str | None,
        Opt(
            "--ledger",
            help="redis:// URL of the capacity ledger several router replicas of one pool "
            "share (default: none, this replica alone).",
        ),
    ] = None,
    ledger_lease: Annotated[
        str,
        Opt("--ledger-lease", help="How long a dead replica's capacity leases outlive it."),
    ] = "3s",
    host: Annotated[str, Opt("--host", help="Address to bind.")] = "127.0.0.1",
    port: Port = 8081,
    ports_file: PortsFile = None,
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
    log_level: LogLevel = "info",
    log_format: LogFormat = "text",
    access_log_sample: AccessLogSample = 1.0,
    coordinator_config: Annotated[
        Path | None,
        Opt(
            "--coordinator-config",
            help="Also serve the coordinator of this file on the same port, in process "
            "(default: none).",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int, Opt("--max-body-bytes", min=1, help="Largest request body; 413 above.")
    ] = 10 * _KIB * _KIB,
    max_headers: Annotated[
        int, Opt("--max-headers", min=1, help="Most header fields in a request; 431 above.")
    ] = 100,
    max_header_bytes: Annotated[
        int,
        Opt("--max-header-bytes", min=1, help="Longest header field, name plus value; 431 above."),
    ] = 16 * _KIB,
    max_headers_total_bytes: Annotated[
        int,
        Opt("--max-headers-total-bytes", min=1, help="All header fields together; 431 above."),
    ] = 64 * _KIB,
) -> None:
    """Run the router: flow control in front of a pool of model servers."""
    from sluiceway.observability.logging import configure_logging
    from sluiceway.observability.request_observer import observe_process

    try:
        configure_logging(log_level, log_format)
        tracing = observe_process("sluiceway-router", log_format, access_log_sample)
    except SluicewayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    from sluiceway.router.build import build_router, chart_pod_labels, load_picker_config
    from sluiceway.router.discovery import Discovery, PodSource
    from sluiceway.router.limits import RequestLimits
    from sluiceway.router.objective_files import apply_objectives, watch_objective_path
    from sluiceway.router.objectives import ObjectiveTable
    from sluiceway.router.serve import Listen, serve_router
    from sluiceway.router.settings import RouterSettings

    try:
        chart_labels = chart_pod_labels(config)
        given = endpoints or endpoints_file or endpoints_dns or inference_pool or pod_selector
        pods = PodSource.from_flags(
            inference_pool,
            pod_selector,
            target_port,
            namespace,
            chart_labels=None if given else chart_labels,
        )
        discovery = Discovery.from_flags(
            endpoints,
            endpoints_file,
            endpoints_dns,
            dns_interval=_seconds(dns_interval, "--dns-interval"),
            pods=pods,
        )
        pool_name = pool_name or inference_pool
        settings = RouterSettings(
            endpoints=discovery.endpoints,
            pool_name=pool_name,
            drain_timeout=_seconds(drain_timeout, "--drain-timeout"),
            health_interval=_seconds(health_interval, "--health-interval"),
            models_interval=_seconds(models_interval, "--models-interval"),
            prefix_affinity=prefix_affinity,
            metrics_scrape_interval=_seconds(metrics_scrape_interval, "--metrics-scrape-interval"),
            access_log_sample=access_log_sample,
            ledger=_ledger(ledger, ledger_lease),
            limits=RequestLimits(
                max_body_bytes, max_headers, max_header_bytes, max_headers_total_bytes
            ),
        )
        picker, notes = load_picker_config(config)
        notes += _chart_labels_note(chart_labels, bool(given), pod_selector)
        table = ObjectiveTable()
        background: list[Callable[[], Coroutine[Any, Any, None]]] = []
        if objectives is not None:
            _, found = apply_objectives(objectives, table, pool_name)
            notes += found
            path = objectives
            background.append(lambda: watch_objective_path(path, table, pool_name))
        if kube_objectives:
            background.append(_kube_job(table, pool_name, namespace))
        clock = make_clock(time_scale, time_anchor)
        app, built_notes = build_router(picker, settings, clock, objectives=table, tracing=tracing)
        background += discovery.jobs(app.gateway, clock)
        front = None if coordinator_config is None else _coordinator_config(coordinator_config)
        for note in _keyed_notes([*notes, *built_notes], front):
            typer.echo(f"note: {note}", err=True)
        listen = Listen(host, port, ports_file)
        if front is None:
            _run(serve_router(app, listen, background=background))
        else:
            _run(_serve_with_coordinator(app, listen, background, front, clock))
    except SluicewayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _ledger(url: str | None, lease: str) -> LedgerSettings | None:
    from sluiceway.ledger.leases import LedgerSettings

    if not url:
        return None
    return LedgerSettings(url, lease=_seconds(lease, "--ledger-lease"))


def _chart_labels_note(
    chart_labels: dict[str, str], given: bool, pod_selector: str | None
) -> list[str]:
    """Say that the values' model server labels are unused when a flag names other endpoints;
    not when ``--pod-selector`` names those very labels, as the Helm chart passes them."""
    from sluiceway.router.inference_pool import parse_selector

    if not chart_labels or not given:
        return []
    if pod_selector is not None and parse_selector(pod_selector) == chart_labels:
        return []
    return ["router.modelServers.matchLabels is not used: endpoints come from flags"]


def _keyed_notes(notes: list[str], front: CoordinatorConfig | None) -> list[str]:
    """With the coordinator's API keys, no ``trustedSources`` trusts nobody: say that instead."""
    from sluiceway.router.build import KEYED_TRUST_NOTE, OPEN_TRUST_NOTE

    if front is None or not front.broker.api_keys:
        return notes
    return [KEYED_TRUST_NOTE if note == OPEN_TRUST_NOTE else note for note in notes]


def _coordinator_config(path: Path) -> CoordinatorConfig:
    from sluiceway.config.coordinator import load_coordinator_config
    from sluiceway.config.documents import read_document

    loaded = load_coordinator_config(read_document(path))
    for warning in loaded.warnings:
        typer.echo(f"note: {path}: {warning}", err=True)
    return loaded.value


async def _serve_with_coordinator(
    app: RouterApp,
    listen: Listen,
    background: list[Callable[[], Coroutine[Any, Any, None]]],
    config: CoordinatorConfig,
    clock: Clock,
) -> None:
    """The router with the coordinator mounted: mode-header requests and ``/v1/requests/``
    go to the coordinator, whose passthrough calls the router's handler in process."""
    from sluiceway.coordinator.server import open_coordinator
    from sluiceway.router.serve import serve_router

    limit = app.gateway.settings.limits.body_bytes
    async with open_coordinator(config, clock=clock, router=app, max_body_bytes=limit):
        await serve_router(app, listen, background=background)


def _kube_job(
    table: ObjectiveTable, pool: str | None, namespace: str | None
) -> Callable[[], Coroutine[Any, Any, None]]:
    from sluiceway.router.kube import ObjectiveWatch, kube_api_from_environment

    async def job() -> None:
        api = await kube_api_from_environment()
        try:
            await ObjectiveWatch(api, table, pool, namespace=namespace).run()
        finally:
            await api.close()

    return job


def _run(main: Awaitable[None]) -> None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop comes with uvicorn[standard]
        asyncio.run(main)  # type: ignore[arg-type]
        return
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(main)  # type: ignore[arg-type]
