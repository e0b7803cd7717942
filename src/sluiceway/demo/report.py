"""The demo's report directory: ``index.html`` with every check and table, and the PNG plots
when matplotlib is installed (without it the page says how to get them)."""

from __future__ import annotations

import html
from pathlib import Path

from sluiceway.demo import plots
from sluiceway.demo.findings import Findings, StepReport
from sluiceway.demo.tables import Grid, check_grid, findings_grids

__all__ = ["write_demo_report"]

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 70em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
.yes { color: #1b5e20; } .NO { color: #b71c1c; font-weight: bold; } .busy { color: #8a6d00; }
img { max-width: 100%; display: block; margin: 1em 0; }
"""


def _grid_html(grid: Grid) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in grid.header)
    rows = "".join(
        "<tr>"
        + "".join(f'<td class="{html.escape(c)}">{html.escape(c)}</td>' for c in row)
        + "</tr>"
        for row in grid.rows
    )
    return f"<h3>{html.escape(grid.title)}</h3><table><tr>{head}</tr>{rows}</table>"


def write_demo_report(
    directory: Path, reports: list[StepReport], findings: Findings, summary: str
) -> tuple[Path, list[Path]]:
    """Write the page and the plots; returns the page and the pictures drawn."""
    directory.mkdir(parents=True, exist_ok=True)
    pictures = plots.draw_plots(findings, directory) if plots.plotting_available() else []
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>sluiceway demo</title>",
        f"<style>{_STYLE}</style></head><body><h1>sluiceway demo</h1>",
        f"<p>{html.escape(summary)}</p>",
    ]
    if pictures:
        parts += [f'<img src="{p.name}" alt="{p.stem}">' for p in pictures]
    else:
        hint = html.escape(plots.INSTALL_HINT)
        parts.append(f"<p>No plots: install the plotting library with <code>{hint}</code>.</p>")
    parts += [_grid_html(g) for g in findings_grids(findings)]
    parts += [_grid_html(check_grid(r)) for r in reports]
    parts.append("</body></html>")
    page = directory / "index.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page, pictures
