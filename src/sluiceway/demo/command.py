"""``sluiceway demo``: runs the guide's scenarios on the simulator and says what it saw."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from sluiceway.clock import Clock
from sluiceway.options import TimeAnchor, TimeScale, make_clock

if TYPE_CHECKING:
    from sluiceway.demo.steps import StepReport

__all__ = ["register"]


def _show(console: Console, report: StepReport) -> None:
    table = Table(title=f"Scenario {report.name}  ({report.wall_seconds:.1f} s wall)")
    table.add_column("check")
    table.add_column("ok", justify="center")
    table.add_column("observed")
    for check in report.checks:
        table.add_row(check.what, "[green]yes[/]" if check.passed else "[red]NO[/]", check.detail)
    console.print(table)


async def _run(clock: Clock, console: Console) -> bool:
    from sluiceway.demo.steps import scenario_a, scenario_b
    from sluiceway.sim import SimConfig, running_simulator
    from sluiceway.wire.headers import FAIRNESS_ID, OBJECTIVE

    config = SimConfig.from_profile("guide-pool", label_headers=(OBJECTIVE, FAIRNESS_ID))
    console.print(
        f"simulated pool: profile guide-pool, {config.max_num_seqs} slots, "
        f"time scale {clock.scale:g}; processor configured from the guide's values file"
    )
    ok = True
    for step in (scenario_a, scenario_b):
        async with running_simulator(config, instances=1, clock=clock) as sim:
            report = await step(sim, clock)
        _show(console, report)
        ok = ok and report.passed
    return ok


def demo(time_scale: TimeScale = 20.0, time_anchor: TimeAnchor = None) -> None:
    """Run the multi-tenant guide's scenarios A and B on the simulator, in one process."""
    console = Console()
    ok = asyncio.run(_run(make_clock(time_scale, time_anchor), console))
    console.print("[green]demo passed[/]" if ok else "[red]demo failed: see the NO rows[/]")
    if not ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
