"""``sluiceway demo``: the whole system in one process, every guide scenario checked.

Each step brings up the simulator, the router, the coordinator and the processor on loopback,
runs its scenario through the coordinator and checks what it must observe. The command prints
a table per step and the measurements, writes an HTML report with plots, and exits 1 when any
check fails. ``--keep-running`` then leaves one stack up for the user's own requests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from sluiceway.options import TimeAnchor, make_clock

if TYPE_CHECKING:
    from sluiceway.clock import Clock
    from sluiceway.demo.context import StepContext
    from sluiceway.demo.findings import StepReport
    from sluiceway.demo.steps import Step

__all__ = ["register"]


class _WarningsOnce(logging.Handler):
    """Collects each distinct warning once, to print after the run (not once per step)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: dict[str, None] = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.setdefault(f"{record.name}: {record.getMessage()}", None)


async def _run_step(step: Step, ctx: StepContext) -> StepReport:
    from sluiceway.demo.findings import StepReport

    report = StepReport(step.key, step.title)
    started = time.monotonic()
    try:
        await asyncio.wait_for(step.run(ctx, report), step.timeout)
    except TimeoutError:
        report.check("finished in time", False, f"still running after {step.timeout:.0f} s")
    except Exception as exc:  # a broken step fails its check; the others still run
        report.check("ran without error", False, f"{type(exc).__name__}: {exc}")
    report.wall_seconds = time.monotonic() - started
    return report


async def _run_steps(ctx: StepContext, steps: list[Step], console: Console) -> list[StepReport]:
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from sluiceway.demo.tables import check_grid, rich_table

    reports = []
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        overall = progress.add_task("demo", total=len(steps))
        for step in steps:
            progress.update(overall, description=f"scenario {step.key}: {step.title}")
            report = await _run_step(step, ctx)
            progress.console.print(rich_table(check_grid(report)))
            progress.advance(overall)
            reports.append(report)
    return reports


def _pick(keys: str | None) -> list[Step]:
    from sluiceway.demo.steps import STEPS

    if not keys:
        return list(STEPS)
    wanted = [k.strip().upper() for k in keys.split(",") if k.strip()]
    known = {s.key: s for s in STEPS}
    unknown = [k for k in wanted if k not in known]
    if unknown:
        raise typer.BadParameter(f"unknown step {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[k] for k in wanted]


async def _demo(
    clock: Clock, steps: list[Step], redis_url: str | None, report_dir: Path, console: Console
) -> bool:
    from sluiceway.demo import plots
    from sluiceway.demo.context import StepContext
    from sluiceway.demo.report import write_demo_report
    from sluiceway.demo.tables import findings_grids, rich_table

    broker = f"Redis at {redis_url}" if redis_url else "the in-process memory broker"
    console.print(
        f"sluiceway demo: simulated pool (guide-pool, 10 slots) behind the router, the "
        f"coordinator in front, the processor on {broker}; time scale {clock.scale:g}"
    )
    ctx = StepContext(clock, redis_url)
    started = time.monotonic()
    reports = await _run_steps(ctx, steps, console)
    for grid in findings_grids(ctx.findings):
        console.print(rich_table(grid))
    failed = [r.key for r in reports if not r.passed]
    summary = (
        f"{len(reports) - len(failed)} of {len(reports)} scenarios passed in "
        f"{time.monotonic() - started:.0f} s (time scale {clock.scale:g})"
    )
    if not plots.plotting_available():
        hint = escape(plots.INSTALL_HINT)
        console.print(f"[yellow]no plots: install the plotting library with {hint}[/]")
    page, pictures = write_demo_report(report_dir, reports, ctx.findings, summary)
    console.print(f"report: {page} ({len(pictures)} plots)")
    if failed:
        console.print(f"[red]demo failed[/]: scenario {', '.join(failed)} (see the NO rows)")
    else:
        console.print(f"[green]demo passed[/]: {summary}")
    return not failed


def _check_redis(url: str, clock: Clock) -> None:
    from sluiceway.demo.stack import check_broker
    from sluiceway.errors import SluicewayError

    if not url.startswith(("redis://", "rediss://", "unix://")):
        typer.echo(f"error: --redis: {url!r}: use redis://, rediss:// or unix://", err=True)
        raise typer.Exit(2)
    try:
        asyncio.run(check_broker(url, clock))
    except (SluicewayError, ValueError) as exc:
        typer.echo(f"error: --redis: {exc}", err=True)
        raise typer.Exit(2) from None


def demo(
    time_scale: Annotated[
        float, typer.Option("--time-scale", help="Scaled seconds per wall second.")
    ] = 5.0,
    time_anchor: TimeAnchor = None,
    redis: Annotated[
        str | None,
        typer.Option(
            "--redis", help="Run the broker and quotas on this Redis URL (default: in memory)."
        ),
    ] = None,
    keep_running: Annotated[
        bool, typer.Option("--keep-running", help="Leave a stack up afterwards and print its URLs.")
    ] = False,
    report: Annotated[
        Path, typer.Option("--report", help="Where to write the HTML report and plots.")
    ] = Path("sluiceway-report"),
    steps: Annotated[
        str | None, typer.Option("--steps", help="Only these steps, e.g. A,B (default: all).")
    ] = None,
) -> None:
    """Run the multi-tenant guide's scenarios end to end on the simulator, in one process."""
    if time_scale <= 0:
        raise typer.BadParameter("must be > 0", param_hint="--time-scale")
    chosen = _pick(steps)
    console = Console()
    collector = _WarningsOnce()
    root = logging.getLogger()
    root.addHandler(collector)
    try:
        clock = make_clock(time_scale, time_anchor)
        if redis is not None:
            _check_redis(redis, clock)
        ok = asyncio.run(_demo(clock, chosen, redis, report, console))
        for line in collector.seen:
            console.print(f"[yellow]warning[/] {line}", highlight=False)
        if keep_running:
            from sluiceway.demo.keep import keep_running as keep

            asyncio.run(keep(clock, redis, console))
    finally:
        root.removeHandler(collector)
    if not ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
