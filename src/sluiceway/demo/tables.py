"""The demo's tables, as rows (shared by the terminal and the HTML report) and as rich tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table

from sluiceway.demo.findings import Findings, StepReport, nearest_rank
from sluiceway.demo.observe import BANDS

__all__ = ["Grid", "check_grid", "findings_grids", "rich_table"]

TEAMS = ("premium", "standard", "batch")


@dataclass(frozen=True)
class Grid:
    """A titled table of text cells."""

    title: str
    header: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]


def check_grid(report: StepReport) -> Grid:
    rows = [(c.what, c.verdict, c.detail) for c in report.checks]
    title = f"Scenario {report.key}: {report.title}  ({report.wall_seconds:.1f} s wall)"
    return Grid(title, ("check", "ok", "observed"), rows)


def findings_grids(findings: Findings) -> list[Grid]:
    grids = []
    if findings.lanes:
        grids.append(_lanes(findings))
    if findings.quota:
        grids.append(_quota(findings))
    if findings.ttft:
        grids.append(_ttft(findings))
    return grids


def _lanes(findings: Findings) -> Grid:
    rows = [
        (
            r.lane,
            str(BANDS.get(r.lane, "")),
            str(r.count),
            str(r.done_rank),
            f"{r.first_start:.2f}",
            f"{r.last_start:.2f}",
            f"{r.wait_p50:.2f}",
            f"{r.wait_max:.2f}",
        )
        for r in findings.lanes
    ]
    header = ("lane", "band", "started", "finished", "first start", "last start")
    return Grid(
        "Scenario B per lane (scaled s since queued; finished: order the lanes emptied)",
        (*header, "wait p50", "wait max"),
        rows,
    )


def _quota(findings: Findings, rows: int = 12) -> Grid:
    samples = findings.quota
    step = max(1, len(samples) // rows)
    picked = samples[::step]
    if samples and picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    body = [(f"{t:.1f}", *(str(c.get(team, 0)) for team in TEAMS)) for t, c in picked]
    title = "Scenario B quota counters over time (quota:team:<team>; limits 2 / 2 / 1)"
    return Grid(title, ("t (s)", *TEAMS), body)


def _ttft(findings: Findings) -> Grid:
    rows = [
        (label, str(len(v)), f"{nearest_rank(v, 50):.3f}", f"{nearest_rank(v, 90):.3f}")
        for label, v in findings.ttft.items()
    ]
    return Grid(
        "Realtime TTFT (scaled s), alone and mixed with batch work",
        ("run", "n", "p50", "p90"),
        rows,
    )


def rich_table(grid: Grid) -> Table:
    table = Table(title=grid.title)
    for name in grid.header:
        table.add_column(name)
    for row in grid.rows:
        table.add_row(*(_style(cell) for cell in row))
    return table


def _style(cell: str) -> str:
    if cell == "yes":
        return "[green]yes[/]"
    if cell == "NO":
        return "[red]NO[/]"
    if cell == "too busy":
        return "[yellow]too busy[/]"
    return cell.replace("[", r"\[")
