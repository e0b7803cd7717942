"""``sluiceway bench ...``: the benchmark harnesses shipped to users."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register"]

Opt = typer.Option
bench_app = typer.Typer(help="Benchmarks shipped with sluiceway.", no_args_is_help=True)


@bench_app.command("isolation")
def isolation(
    modes: Annotated[
        str, Opt(help="none,holdback,eviction,best (default all four; --quick: none,eviction)")
    ] = "",
    quick: Annotated[bool, Opt("--quick", help="one level (80 %), short stages")] = False,
    full: Annotated[
        bool, Opt("--full", help="the nightly plan (the default): about 14 min per mode")
    ] = False,
    levels: Annotated[str, Opt(help="levels in percent of C (default 20,80,90,100)")] = "",
    output: Annotated[Path, Opt(help="where report.json and summary.html go")] = Path(
        "sluiceway-isolation"
    ),
    time_scale: Annotated[float, Opt(help="simulated seconds per wall second")] = 1.0,
    capacity: Annotated[int, Opt(help="pool capacity C")] = 10,
    endpoints: Annotated[
        str,
        Opt(
            help="model server URLs instead of the simulator "
            "(--client inference-perf: the coordinator URL)"
        ),
    ] = "",
    set_: Annotated[list[str] | None, Opt("--set", help="tolerance AMT_KEY=VALUE")] = None,
    analyze: Annotated[Path | None, Opt(help="judge inference-perf results in DIR")] = None,
    client: Annotated[str, Opt(help="builtin, or inference-perf (writes its configs)")] = (
        "builtin"
    ),
    inference_perf_venv: Annotated[
        Path | None, Opt(help="the virtualenv with inference-perf (--client inference-perf)")
    ] = None,
    tokenizer: Annotated[
        str | None,
        Opt(help="tokenizer directory for inference-perf (required with --client inference-perf)"),
    ] = None,
    model_servers: Annotated[
        str,
        Opt(help="model server URLs run.sh samples (--client inference-perf; default: none)"),
    ] = "",
    router_replicas: Annotated[
        int, Opt(help="router processes in front of the pool (above 1: queues on a private Redis)")
    ] = 1,
    processors: Annotated[int, Opt(help="processors draining the queues")] = 1,
    no_ledger: Annotated[
        bool,
        Opt("--no-ledger", help="several routers without the capacity ledger (upstream's way)"),
    ] = False,
) -> None:
    """Realtime isolation under an async backlog: the nightly validator's test, on one pool."""
    from sluiceway.bench.isolation.command import run_command

    code = run_command(
        modes=modes,
        quick=quick,
        full=full,
        levels=levels,
        output=output,
        time_scale=time_scale,
        capacity=capacity,
        endpoints=endpoints,
        settings=set_ or [],
        analyze=analyze,
        client=client,
        venv=inference_perf_venv,
        tokenizer=tokenizer,
        model_servers=model_servers,
        router_replicas=router_replicas,
        processors=processors,
        ledger=not no_ledger,
    )
    raise typer.Exit(code)


@bench_app.command("isolation-sample")
def isolation_sample(
    model_servers: Annotated[str, Opt(help="model server URLs, comma separated")],
    router: Annotated[str, Opt(help="the router's URL (its /metrics has the bands)")],
    output: Annotated[Path, Opt(help="the samples.json to write")],
    interval: Annotated[float, Opt(help="seconds between samples")] = 0.25,
) -> None:
    """Sample the model servers and the router for an inference-perf run until SIGTERM/SIGINT."""
    from sluiceway.bench.isolation.sample_command import sample_command

    raise typer.Exit(sample_command(model_servers, router, output, interval))


def register(app: typer.Typer) -> None:
    """Add the ``bench`` command group."""
    app.add_typer(bench_app, name="bench")
