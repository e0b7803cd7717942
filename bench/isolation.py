"""Realtime isolation under an async backlog (``sluiceway bench isolation``), quick plan.

``python -m bench isolation`` runs ``--quick`` of all four modes (none, holdback, eviction,
best: about a minute each); any further arguments are passed to the command (``--full``,
``--modes``, ``--output``, ``--time-scale`` ...). The no-protection mode is the baseline every
other mode is measured against in the same run. See docs/isolation.md.
"""

from __future__ import annotations

from pathlib import Path

from sluiceway.bench.isolation.command import run_command
from sluiceway.bench.isolation.modes import MODES


def main(argv: list[str]) -> int:
    if argv:
        from typer.main import get_command

        from sluiceway.bench.command import bench_app

        code = get_command(bench_app).main(["isolation", *argv], standalone_mode=False)
        return int(code or 0)
    return run_command(
        modes=",".join(MODES),
        quick=True,
        full=False,
        levels="",
        output=Path("sluiceway-isolation"),
        time_scale=1.0,
        capacity=10,
        endpoints="",
        settings=[],
        analyze=None,
        client="builtin",
        venv=None,
    )
