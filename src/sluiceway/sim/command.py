"""``sluiceway sim``: serve K simulated model servers (vLLM and llm-d-inference-sim flags).

Latency flags take a duration with a unit (``12ms``, ``0.03s``, ``250us``); a bare number is
milliseconds, as llm-d-inference-sim's integer flags. Values are scaled seconds (--time-scale).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from sluiceway.errors import ConfigError
from sluiceway.options import Port, PortsFile, TimeAnchor, TimeScale, make_clock
from sluiceway.sim.durations import DURATION_FIELDS, parse_latency

if TYPE_CHECKING:
    from sluiceway.sim.config import SimConfig

__all__ = ["register"]


Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add ``sluiceway sim``."""
    app.command("sim")(sim)


def sim(
    port: Port = 0,
    instances: Annotated[
        int, Opt("--instances", min=1, help="Engines, one port each (from --port up).")
    ] = 1,
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
    ports_file: PortsFile = None,
    host: Annotated[str, Opt("--host", help="Address to bind.")] = "127.0.0.1",
    seed: Annotated[int, Opt("--seed", help="Random seed of the engines.")] = 0,
    profile: Annotated[
        str, Opt("--profile", help="Timing and capacity preset: guide-pool, h100-8b or default.")
    ] = "default",
    model: Annotated[
        str | None,
        Opt("--model", help="Served model name (default: from --profile).", show_default=False),
    ] = None,
    max_num_seqs: Annotated[
        int | None,
        Opt(
            "--max-num-seqs",
            help="Requests running at once per engine (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    max_model_len: Annotated[
        int | None,
        Opt(
            "--max-model-len",
            help="Longest prompt plus output, in tokens (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    block_size: Annotated[
        int | None,
        Opt(
            "--block-size",
            help="Tokens per KV-cache block (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    num_gpu_blocks: Annotated[
        int | None,
        Opt(
            "--num-gpu-blocks",
            help="KV-cache blocks per engine (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    scheduling_policy: Annotated[
        str | None,
        Opt(
            "--scheduling-policy",
            help="fcfs or priority (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    max_waiting_queue_length: Annotated[
        int | None,
        Opt(
            "--max-waiting-queue-length",
            help="Waiting requests before 429s (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    time_to_first_token: Annotated[
        str | None,
        Opt(
            "--time-to-first-token",
            help="Mean TTFT, e.g. 120ms (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    inter_token_latency: Annotated[
        str | None,
        Opt(
            "--inter-token-latency",
            help="Mean time between tokens, e.g. 30ms (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    time_to_first_token_std_dev: Annotated[
        str | None,
        Opt(
            "--time-to-first-token-std-dev",
            help="Standard deviation of TTFT (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    inter_token_latency_std_dev: Annotated[
        str | None,
        Opt(
            "--inter-token-latency-std-dev",
            help="Standard deviation of the inter-token latency (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    prefill_overhead: Annotated[
        str | None,
        Opt(
            "--prefill-overhead",
            help="Fixed prefill time per request (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    prefill_time_per_token: Annotated[
        str | None,
        Opt(
            "--prefill-time-per-token",
            help="Prefill time per prompt token (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    time_factor_under_load: Annotated[
        float | None,
        Opt(
            "--time-factor-under-load",
            help="Latency factor when the engine is full (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    failure_injection_rate: Annotated[
        float | None,
        Opt(
            "--failure-injection-rate",
            help="Share of requests failed on purpose, 0-1 (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    failure_types: Annotated[
        list[str] | None,
        Opt(
            "--failure-types",
            help="Injected failure kinds, repeatable (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    failure_retry_after: Annotated[
        str | None,
        Opt(
            "--failure-retry-after",
            help="Retry-After of injected 429s (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    label_header: Annotated[
        list[str] | None,
        Opt(
            "--label-header",
            help="Header whose value labels metrics, repeatable (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    eos_probability: Annotated[
        float | None,
        Opt(
            "--eos-probability",
            help="Chance per token of ending early (default: from --profile).",
            show_default=False,
        ),
    ] = None,
    no_prefix_caching: Annotated[
        bool, Opt("--no-enable-prefix-caching", help="Turn prefix caching off (default: on).")
    ] = False,
) -> None:
    """Serve simulated vLLM model servers on loopback (or --host)."""
    given = {k: v for k, v in locals().items() if v is not None}
    from sluiceway.ports import check_port_free

    try:
        config = _config(given)
        for offset in range(instances if port else 0):
            check_port_free(host, port + offset, flag="--port")
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    from sluiceway.sim.serve_forever import run_simulator

    clock = make_clock(time_scale, time_anchor)
    run_simulator(config, instances, clock, host, port, ports_file)


def _config(given: dict[str, Any]) -> SimConfig:
    from sluiceway.sim.config import SimConfig, flag_name

    overrides: dict[str, Any] = {"seed": given["seed"]}
    for name in (
        "model", "max_num_seqs", "max_model_len", "block_size", "num_gpu_blocks",
        "scheduling_policy", "max_waiting_queue_length", "time_factor_under_load",
        "failure_injection_rate", "failure_retry_after", "eos_probability",
    ):  # fmt: skip
        if name in given:
            overrides[name] = given[name]
    for name in DURATION_FIELDS:
        if name in given:
            overrides[name] = parse_latency(given[name], flag_name(name))
    if given.get("failure_types"):
        types = [t for item in given["failure_types"] for t in item.split(",") if t]
        overrides["failure_types"] = tuple(types)
    if given.get("label_header"):
        overrides["label_headers"] = tuple(given["label_header"])
    if given.get("no_prefix_caching"):
        overrides["enable_prefix_caching"] = False
    return SimConfig.from_profile(given["profile"], **overrides)
