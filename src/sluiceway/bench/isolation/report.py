"""Write a run's ``report.json`` and ``summary.html`` (bar plots as inline SVG, no
dependencies)."""

from __future__ import annotations

import html
import json
from pathlib import Path

from sluiceway.bench.isolation.result import IsolationReport

__all__ = ["summary_lines", "write_report"]

_PLOTS = (
    ("Realtime TTFT p90, mixed / baseline", "ttft_p90_ratio"),
    ("Realtime E2E p90, mixed / baseline", "e2e_p90_ratio"),
    ("Async goodput / model-time slack", "goodput_slack_ratio"),
    ("Wasted generated tokens (%): for nobody, evicted, recomputed", "wasted_tokens_pct"),
    ("Async requests abandoned while running", "fate_abandoned_running"),
)


# (column, report key, format) of the terminal summary: what clients received, first
_COLUMNS = (
    ("TTFT p90 x", "ttft_p90_ratio", "{:.2f}"),
    ("goodput/s", "async_goodput_per_s", "{:.2f}"),
    ("slack/s", "slack_completions_per_s", "{:.2f}"),
    ("goodput/slack", "goodput_slack_ratio", "{:.2f}"),
    ("dispatch/s", "async_dispatches_per_s", "{:.2f}"),
    ("waste %", "wasted_tokens_pct", "{:.1f}"),
    ("admitted", "max_admitted", "{:.0f}"),
    ("lag ms", "loop_lag_p99_ms", "{:.1f}"),
)
_FATES = ("delivered", "abandoned_queued", "abandoned_running", "deadline", "dropped", "error")


def summary_lines(report: IsolationReport) -> list[str]:
    """One line per mode and level (and the async-only stage): the figures side by side."""
    head = ["mode", "stage", *(c for c, _, _ in _COLUMNS), "fates (" + " / ".join(_FATES) + ")"]
    rows = [head]
    for mode, result in report.modes.items():
        stages = {f"L{level}": figs for level, figs in result.figures.items()}
        for stage, figs in {"async-only": result.async_only, **stages}.items():
            if not figs:
                continue
            cells = [_cell(fmt, figs.get(key)) for _, key, fmt in _COLUMNS]
            fates = " / ".join(_cell("{:.0f}", figs.get(f"fate_{f}")) for f in _FATES)
            rows.append(
                [mode, stage, *cells, f"{fates} of {_cell('{:.0f}', figs.get('fate_arrivals'))}"]
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _cell(fmt: str, value: float | None) -> str:
    return "-" if value is None else fmt.format(value)


def write_report(report: IsolationReport, out: Path) -> Path:
    """Write both files into ``out`` (created); returns the JSON path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.json"
    path.write_text(json.dumps(report.as_json(), indent=2) + "\n")
    (out / "summary.html").write_text(summary_html(report))
    return path


def _bars(title: str, key: str, report: IsolationReport) -> str:
    rows = [
        (f"{mode} L{level}", figs.get(key))
        for mode, result in report.modes.items()
        for level, figs in result.figures.items()
    ]
    top = max((v for _, v in rows if v is not None), default=1.0) or 1.0
    height = 22 * len(rows) + 30
    parts = [f'<h3>{html.escape(title)}</h3><svg width="560" height="{height}">']
    for i, (label, value) in enumerate(rows):
        y = 20 + 22 * i
        width = 0 if value is None else 360 * value / top
        text = "n/a" if value is None else f"{value:.3g}"
        parts.append(
            f'<text x="0" y="{y + 14}" font-size="12">{html.escape(label)}</text>'
            f'<rect x="130" y="{y}" width="{width:.1f}" height="16" fill="#4a7"/>'
            f'<text x="{135 + width:.1f}" y="{y + 14}" font-size="12">{text}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _checks_table(report: IsolationReport) -> str:
    rows = []
    for mode, result in report.modes.items():
        verdict = "PASS" if result.passed else "FAIL"
        if not result.valid:
            verdict = f"INVALID: {result.invalid_reason} (unjudged: {verdict})"
        rows.append(
            f"<h3>{html.escape(mode)}: {html.escape(verdict)} "
            f"(valid: {str(result.valid).lower()})</h3><table>"
            "<tr><th>check</th><th>passed</th><th>observed</th><th>bound</th></tr>"
        )
        for c in result.checks:
            colour = "#dfd" if c.passed else "#fdd"
            rows.append(
                f'<tr style="background:{colour}"><td>{html.escape(c.name)}</td>'
                f"<td>{c.passed}</td><td>{_num(c.observed)}</td><td>{_num(c.bound)}</td></tr>"
            )
        rows.append("</table>")
    return "".join(rows)


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def summary_html(report: IsolationReport) -> str:
    plots = "".join(_bars(title, key, report) for title, key in _PLOTS)
    run = html.escape(json.dumps(report.run))
    return (
        "<!doctype html><meta charset=utf-8><title>sluiceway isolation</title>"
        "<style>body{font-family:sans-serif}td,th{padding:2px 8px;font-size:13px}</style>"
        f"<h1>Realtime isolation</h1><p><code>{run}</code></p>{plots}{_checks_table(report)}"
    )
