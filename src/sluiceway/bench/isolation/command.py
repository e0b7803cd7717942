"""The ``sluiceway bench isolation`` command: parse, run (or analyse), write, summarise.

Exit status: 0 when every mode is valid and every protected mode passes its checks (the
no-protection control is expected to fail); 1 when a valid protected mode failed; 3 when none
failed but a mode is invalid (the machine was too busy to judge it); 2 on bad options.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sluiceway.bench.isolation.modes import MODES
from sluiceway.bench.isolation.plan import IsolationOptions, Topology
from sluiceway.bench.isolation.report import summary_lines, write_report
from sluiceway.bench.isolation.result import IsolationReport

__all__ = ["exit_code", "parse_settings", "run_command"]

QUICK_MODES = ("none", "eviction")
INVALID = 3


def _split(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def parse_settings(items: list[str]) -> dict[str, str]:
    """``AMT_KEY=VALUE`` pairs; anything else is a :class:`ValueError`."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("AMT_"):
            raise ValueError(f"--set {item!r}: expected AMT_KEY=VALUE")
        out[key] = value
    return out


def exit_code(report: IsolationReport) -> int:
    """1 when a valid protected mode failed, else 3 when a mode is invalid (its figures
    cannot be judged: the machine was too busy, or the control passed), else 0."""
    protected = [r for m, r in report.modes.items() if m != "none"]
    if any(r.valid and not r.passed for r in protected):
        return 1
    return 0 if all(r.valid for r in report.modes.values()) else INVALID


def _print(report: IsolationReport, where: Path) -> None:
    if "router_replicas" in report.run:
        run = report.run
        ledger = "on" if run["ledger"] else "off"
        print(
            f"router replicas {run['router_replicas']}, processors {run['processors']}, "
            f"ledger {ledger}"
        )
    for line in summary_lines(report):
        print(line)
    for mode, result in report.modes.items():
        verdict = "PASS" if result.passed else "FAIL"
        if not result.valid:
            verdict = f"INVALID ({result.invalid_reason}); unjudged: {verdict}"
        print(f"{mode}: {verdict}, valid={str(result.valid).lower()}")
        for check in result.failed():
            print(f"  failed: {check.name} (observed {check.observed}, bound {check.bound})")
    print(f"report: {where}")


def run_command(
    *,
    modes: str,
    quick: bool,
    full: bool,
    levels: str,
    output: Path,
    time_scale: float,
    capacity: int,
    endpoints: str,
    settings: list[str],
    analyze: Path | None,
    client: str,
    venv: Path | None,
    tokenizer: str | None = None,
    model_servers: str = "",
    router_replicas: int = 1,
    processors: int = 1,
    ledger: bool = True,
) -> int:
    try:
        chosen = _split(modes) or (QUICK_MODES if quick else MODES)
        if quick and full:
            raise ValueError("--quick and --full exclude each other")
        options = IsolationOptions(
            modes=chosen,
            quick=quick,
            levels=tuple(int(x) for x in _split(levels)) or None,
            capacity=capacity,
            time_scale=time_scale,
            output=output,
            endpoints=_split(endpoints),
            settings=parse_settings(settings),
            topology=Topology(router_replicas, processors, ledger),
        )
        if client not in ("builtin", "inference-perf"):
            raise ValueError(f"--client {client!r}: use builtin or inference-perf")
        if options.topology.replicated and (client != "builtin" or analyze is not None):
            raise ValueError("--router-replicas and --processors run the builtin client only")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if analyze is not None:
        from sluiceway.bench.isolation.inference_perf_results import analyze_dir

        report = analyze_dir(analyze, options)
    elif client == "inference-perf":
        from sluiceway.bench.isolation.inference_perf import write_configs

        try:
            written = write_configs(
                options, output, venv, tokenizer=tokenizer, model_servers=_split(model_servers)
            )
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path}")
        return 0
    else:
        from sluiceway.bench.isolation.runner import run_isolation

        report = run_isolation(
            options,
            progress=lambda line: print(line, flush=True),
            after_mode=lambda partial: write_report(partial, output),
        )
    _print(report, write_report(report, output))
    return exit_code(report)
