"""``sluiceway status``: what waits where, read from the broker without changing it.

Per queue: pending depth, claimed (in flight or buffered by a processor), parked for retry,
quarantined as invalid, and the earliest pending deadline relative to the scaled clock. Per pool
(when a config is given): its workers and how many of its queues' requests are claimed. On
Redis (the broker's, or ``--ledger``'s): the live router and processor replicas with their
in-flight counts (``status_replicas``). The batches not yet finished, from the broker's
database (``status_batches``).
``--watch S`` redraws every S seconds with rich; ``--json`` prints one JSON document.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sluiceway.broker.inspect import QueueCounts
from sluiceway.errors import ConfigError, SluicewayError
from sluiceway.options import BrokerUrl, TimeAnchor, TimeScale, make_clock
from sluiceway.status_batches import BatchRow, active_batch_rows, render_batches
from sluiceway.status_replicas import ReplicaRow, live_replicas, render_replicas

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from sluiceway.config.processor_settings import ProcessorSettings

__all__ = ["PoolRow", "StatusReport", "build_report", "register", "render", "render_table"]

Opt = typer.Option


@dataclass(frozen=True, slots=True)
class PoolRow:
    """A pool: its configured workers and the claimed requests of its queues."""

    pool: str
    workers: int
    claimed: int


@dataclass(frozen=True, slots=True)
class StatusReport:
    """A snapshot: queue counts, pools, live replicas, and ``now`` (scaled Unix seconds) it
    was taken at."""

    now: float
    queues: tuple[QueueCounts, ...]
    pools: tuple[PoolRow, ...]
    replicas: tuple[ReplicaRow, ...] = ()
    batches: tuple[BatchRow, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "queues": [asdict(q) for q in self.queues],
            "pools": [asdict(p) for p in self.pools],
            "replicas": [asdict(r) for r in self.replicas],
            "batches": [asdict(b) for b in self.batches],
        }


def build_report(
    counts: Sequence[QueueCounts], pools: Mapping[str, tuple[int, Sequence[str]]], now: float
) -> StatusReport:
    """A report from queue counts and ``pools`` (pool id -> (workers, its queue names))."""
    claimed = {c.queue: c.claimed for c in counts}
    rows = tuple(
        PoolRow(pool, workers, sum(claimed.get(q, 0) for q in queues))
        for pool, (workers, queues) in pools.items()
    )
    return StatusReport(now=now, queues=tuple(counts), pools=rows)


def _relative(deadline: float | None, now: float) -> str:
    if deadline is None:
        return "-"
    delta = deadline - now
    return f"in {delta:.0f}s" if delta >= 0 else f"PAST by {-delta:.0f}s"


def render_table(report: StatusReport) -> Table:
    """The report as a rich table (queues first, then pools)."""
    from rich.table import Table

    table = Table(title="sluiceway status", title_justify="left")
    for column in ("queue / pool", "pending", "claimed", "retrying", "invalid", "oldest deadline"):
        table.add_column(
            column, justify="left" if column.startswith(("queue", "oldest")) else "right"
        )
    for q in report.queues:
        table.add_row(
            q.queue, str(q.pending), str(q.claimed), str(q.retrying), str(q.invalid),
            _relative(q.oldest_deadline, report.now),
        )  # fmt: skip
    for p in report.pools:
        table.add_row(f"pool {p.pool} ({p.workers} workers)", "", str(p.claimed), "", "", "")
    return table


def render(report: StatusReport) -> RenderableType:
    """The queue table, the replicas' when any is live, the batches' when any runs."""
    if not report.replicas and not report.batches:
        return render_table(report)
    from rich.console import Group

    parts: list[RenderableType] = [render_table(report)]
    if report.replicas:
        parts.append(render_replicas(list(report.replicas)))
    if report.batches:
        parts.append(render_batches(list(report.batches)))
    return Group(*parts)


# -- the command --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Target:
    transport: str
    url: str | None
    queues: tuple[str, ...]
    pools: Mapping[str, tuple[int, Sequence[str]]]
    replicas: Any = None  # a Redis client holding the replica sets, if any


def _replica_client(broker: Any, ledger: str | None) -> Any:
    """``--ledger``'s Redis, else a Redis broker's own client, else none (the single-machine
    brokers have no replicas to list)."""
    if ledger:
        from sluiceway.broker.redis_connect import connect_redis

        return connect_redis(ledger, max_connections=2)
    from sluiceway.broker.redis import RedisBroker

    return broker.client if isinstance(broker, RedisBroker) else None


def _from_settings(settings: ProcessorSettings) -> _Target:
    tc = settings.transport_config
    names = tuple(q.queue_name for q in tc.all_queues)
    pools = {
        p.id: (p.workers, [q.queue_name for q in tc.all_queues if q.worker_pool_id == p.id])
        for p in settings.pools
    }
    url = tc.path if settings.transport == "sqlite" else (tc.url or None)
    return _Target(settings.transport, url, names, pools)


def _target(
    queues: Sequence[str],
    transport: str,
    url: str | None,
    config: Path | None,
    transport_config_file: Path | None,
    pool_config_file: Path | None,
) -> _Target:
    if config is None and transport_config_file is None:
        if not queues:
            raise ConfigError("name QUEUEs, or give --config / --transport-config-file")
        return _Target(transport, url, tuple(queues), {})
    from sluiceway.config.processor_settings import load_processor_settings

    settings = load_processor_settings(
        config_file=config,
        transport=transport if transport_config_file is not None else None,
        transport_config_file=transport_config_file,
        pool_config_file=pool_config_file,
    ).value
    found = _from_settings(settings)
    return _Target(found.transport, url or found.url, tuple(queues) or found.queues, found.pools)


def status(
    queues: Annotated[
        list[str] | None,
        typer.Argument(help="Queues to show (default: those of the config).", show_default=False),
    ] = None,
    config: Annotated[
        Path | None,
        Opt(
            "--config",
            help="Helm values file naming queues, pools and broker (default: none).",
            show_default=False,
        ),
    ] = None,
    transport_config_file: Annotated[
        Path | None,
        Opt(
            "--transport-config-file",
            help="Transport config file (default: none).",
            show_default=False,
        ),
    ] = None,
    pool_config_file: Annotated[
        Path | None,
        Opt(
            "--pool-config-file",
            help="Worker pools file (default: one default pool).",
            show_default=False,
        ),
    ] = None,
    transport: Annotated[
        str,
        Opt(
            "--transport",
            help="Broker when no config names it: redis-sortedset, postgres or sqlite.",
        ),
    ] = "redis-sortedset",
    url: BrokerUrl = None,
    ledger: Annotated[
        str | None,
        Opt(
            "--ledger",
            help="redis:// URL of the replica sets (default: the broker's Redis; the routers' "
            "--ledger).",
            show_default=False,
        ),
    ] = None,
    watch: Annotated[
        float, Opt("--watch", min=0, help="Redraw every this many seconds; 0 shows once.")
    ] = 0.0,
    as_json: Annotated[bool, Opt("--json", help="Print one JSON document instead of a table.")] = (
        False
    ),
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
) -> None:
    """Show each queue's depth, claimed, retry and invalid counts and oldest deadline, and the
    live router and processor replicas."""
    from sluiceway.broker.address import open_named_broker

    clock = make_clock(time_scale, time_anchor)

    async def main() -> None:
        target = _target(
            queues or [], transport, url, config, transport_config_file, pool_config_file
        )
        broker = await open_named_broker(target.transport, target.url, must_exist=True)
        replicas = _replica_client(broker, ledger)
        target = dataclasses.replace(target, replicas=replicas)
        try:
            if watch > 0:
                await _watch(broker, target, clock, watch)
                return
            report = await _snapshot(broker, target, clock.now())
            _print(report, as_json=as_json)
        finally:
            if ledger and replicas is not None:
                await replicas.aclose()
            await broker.aclose()

    try:
        asyncio.run(main())
    except SluicewayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        pass


async def _snapshot(broker: Any, target: _Target, now: float) -> StatusReport:
    counts = await broker.queue_counts(list(target.queues))
    report = build_report(counts, target.pools, now)
    batches = await active_batch_rows(target.transport, broker, target.url, now)
    report = dataclasses.replace(report, batches=tuple(batches))
    if target.replicas is None:
        return report
    return dataclasses.replace(report, replicas=tuple(await live_replicas(target.replicas)))


def _print(report: StatusReport, *, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report.as_json()))
        return
    from rich.console import Console

    Console().print(render(report))


async def _watch(broker: Any, target: _Target, clock: Any, every: float) -> None:
    """Redraw in place on a terminal; elsewhere (a pipe, a log) print one table per round."""
    from rich.console import Console
    from rich.live import Live

    console = Console()
    report = await _snapshot(broker, target, clock.now())
    if not console.is_terminal:
        while True:
            console.print(render(report))
            await asyncio.sleep(every)
            report = await _snapshot(broker, target, clock.now())
    with Live(render(report), console=console, auto_refresh=False) as live:
        while True:
            await asyncio.sleep(every)
            report = await _snapshot(broker, target, clock.now())
            live.update(render(report), refresh=True)


def register(app: typer.Typer) -> None:
    """Add ``status``."""
    app.command("status")(status)
