"""The report's pictures, drawn with matplotlib (the ``demo`` extra).

Three PNGs: the lane timeline of scenario B (each request's run at the model server, by lane),
realtime TTFT CDFs alone and mixed, and the pool's occupancy by band over time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sluiceway.demo.findings import Findings
from sluiceway.demo.observe import BANDS

__all__ = ["INSTALL_HINT", "draw_plots", "plotting_available"]

INSTALL_HINT = "pip install 'sluiceway[demo]'"
_COLOURS = {
    "reserved-interactive": "#1b5e20",
    "reserved-async": "#43a047",
    "reserved-batch": "#a5d6a7",
    "overflow-interactive": "#e65100",
    "overflow-async": "#fb8c00",
    "overflow-batch": "#ffcc80",
}


def plotting_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def draw_plots(findings: Findings, directory: Path) -> list[Path]:
    """Write the PNGs the findings allow; returns their paths."""
    plt = _pyplot()
    drawn = []
    for name, draw in (
        ("lane-timeline.png", _lane_timeline),
        ("ttft-cdf.png", _ttft_cdf),
        ("occupancy.png", _occupancy),
    ):
        fig = draw(plt, findings)
        if fig is None:
            continue
        path = directory / name
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        drawn.append(path)
    return drawn


def _runs(findings: Findings) -> list[tuple[str, str, float, float]]:
    """(request, lane, start, end) of every run at the model server in scenario B."""
    open_runs: dict[tuple[str, str], float] = {}
    runs = []
    for e in findings.lane_events:
        key = (e.request, e.lane)
        if e.delta > 0:
            open_runs[key] = e.at
        elif key in open_runs:
            runs.append((e.request, e.lane, open_runs.pop(key), e.at))
    return runs


def _lane_timeline(plt: Any, findings: Findings) -> Any:
    """One row per request, in the order they first started; each run coloured by its lane."""
    runs = _runs(findings)
    if not runs:
        return None
    rows: dict[str, int] = {}
    for request, _, _, _ in sorted(runs, key=lambda r: r[2]):
        rows.setdefault(request, len(rows))
    fig, ax = plt.subplots(figsize=(9, 5))
    for lane in sorted({r[1] for r in runs}, key=lambda name: -BANDS.get(name, -100)):
        mine = [r for r in runs if r[1] == lane]
        ys = [rows[r[0]] for r in mine]
        ax.hlines(
            ys,
            [r[2] for r in mine],
            [r[3] for r in mine],
            colors=_COLOURS.get(lane, "grey"),
            linewidth=2,
            label=lane,
        )
    ax.invert_yaxis()
    ax.set_xlabel("scaled seconds since queued")
    ax.set_ylabel("request (by first start)")
    ax.set_title("Scenario B: each request's run at the model server, by lane")
    ax.legend(loc="lower right", fontsize="small")
    return fig


def _ttft_cdf(plt: Any, findings: Findings) -> Any:
    if not findings.ttft:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, values in findings.ttft.items():
        ordered = sorted(values)
        fractions = [(i + 1) / len(ordered) for i in range(len(ordered))]
        ax.step(ordered, fractions, where="post", label=label)
    ax.set_xlabel("realtime TTFT (scaled s)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("Realtime TTFT, alone and mixed with batch work")
    ax.legend()
    return fig


def _occupancy(plt: Any, findings: Findings) -> Any:
    if not findings.occupancy:
        return None
    count = len(findings.occupancy)
    fig, axes = plt.subplots(count, 1, figsize=(9, 3 * count), squeeze=False)
    for ax, (title, series) in zip(axes[:, 0], findings.occupancy.items(), strict=True):
        lanes = sorted(
            {lane for _, levels in series for lane in levels}, key=lambda n: -BANDS.get(n, -100)
        )
        times = [t for t, _ in series]
        stacks = [[levels.get(lane, 0) for _, levels in series] for lane in lanes]
        colours = [_COLOURS.get(lane, "grey") for lane in lanes]
        ax.stackplot(times, stacks, labels=lanes, colors=colours, step="post")
        ax.set_title(title)
        ax.set_ylabel("running")
        ax.legend(loc="upper right", fontsize="small")
    axes[-1, 0].set_xlabel("scaled seconds")
    fig.suptitle("Pool occupancy by band")
    return fig
