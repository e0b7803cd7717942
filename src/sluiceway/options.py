"""Options every subcommand shares (docs/design-rules.md rules 1, 2), as reusable typer
annotations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sluiceway.clock import RealClock

__all__ = ["Port", "PortsFile", "TimeAnchor", "TimeScale", "make_clock"]

TimeScale = Annotated[
    float,
    typer.Option(
        "--time-scale",
        min=0.0001,
        help="Speed-up of the whole world: scaled now = anchor + (wall - anchor) x S.",
    ),
]
TimeAnchor = Annotated[
    float | None,
    typer.Option("--time-anchor", help="Unix seconds the time scale pivots on (default: start)."),
]
Port = Annotated[
    int, typer.Option("--port", min=0, max=65535, help="TCP port; 0 picks a free one.")
]
PortsFile = Annotated[
    Path | None,
    typer.Option("--ports-file", help="Write the bound ports to this JSON file."),
]


def make_clock(time_scale: float, time_anchor: float | None) -> RealClock:
    """The process clock from the shared flags."""
    return RealClock(scale=time_scale, anchor=time_anchor)
