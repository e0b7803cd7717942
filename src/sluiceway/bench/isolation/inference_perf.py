"""The external client: inference-perf configs for every stage, and the script that runs them.

``write_configs`` writes one config per treatment (``async_only``, ``baseline_<L>``,
``mixed_<L>_async``, ``mixed_<L>_rt``), the nightly's load shapes, pointed at a running
coordinator (``--endpoints``, default ``http://127.0.0.1:8081``): random prompts of a fixed
length asking for exactly the plan's 128 output tokens (``ignore_eos``), tokenized offline by
``--tokenizer``. Its ``run.sh`` runs them in order, records each treatment's wall start and
stop and the machine's wall-minus-monotonic offset (``<treatment>/harness.json``: inference-perf
stamps with a monotonic clock) and, given the model servers (``--model-servers``), samples them
and the router for the whole run (``sluiceway bench isolation-sample`` -> ``samples.json``).
:mod:`~sluiceway.bench.isolation.inference_perf_results` judges what it leaves behind.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sluiceway.bench.isolation.plan import IsolationOptions, realtime_concurrency

__all__ = ["HARNESS_FILE", "LIFECYCLE_FILE", "SAMPLES_FILE", "write_configs"]

LIFECYCLE_FILE = "per_request_lifecycle_metrics.json"
HARNESS_FILE = "harness.json"
SAMPLES_FILE = "samples.json"
DEFAULT_COORDINATOR = "http://127.0.0.1:8081"
PROMPT_TOKENS = 64  # short and fixed: the realtime TTFT should measure queueing, not prefill
NO_TOKENIZER = (
    "--client inference-perf needs --tokenizer DIR (a local Hugging Face tokenizer directory): "
    "its random data counts prompt tokens with it, and without one inference-perf loads the "
    "served model's name from the Hugging Face hub"
)


@dataclass(frozen=True)
class _Target:
    """What every treatment talks to and asks for."""

    base_url: str
    model: str
    tokenizer: str
    output_tokens: int


def _fixed(tokens: int) -> dict[str, int]:
    """A length distribution that always draws ``tokens``."""
    return {"min": tokens, "max": tokens, "mean": tokens, "std_dev": 0}


def _config(
    target: _Target,
    load: dict[str, Any],
    headers: dict[str, str],
    streaming: bool,
    out: str,
) -> dict[str, Any]:
    return {
        "load": load,
        "api": {"type": "completion", "streaming": streaming, "headers": headers},
        "server": {
            "type": "vllm",
            "model_name": target.model,
            "base_url": target.base_url,
            "ignore_eos": True,
        },
        "tokenizer": {"pretrained_model_name_or_path": target.tokenizer},
        # random data sets each request's max_tokens from output_distribution (mock data would
        # leave inference-perf's default of 30)
        "data": {
            "type": "random",
            "input_distribution": _fixed(PROMPT_TOKENS),
            "output_distribution": _fixed(target.output_tokens),
        },
        "report": {"request_lifecycle": {"summary": True, "per_stage": True, "per_request": True}},
        "storage": {"local_storage": {"path": out}},
    }


def _tokenizer_ref(tokenizer: str) -> str:
    """A local directory made absolute (run.sh runs from its own folder); a hub name as is."""
    local = Path(tokenizer).expanduser()
    return str(local.resolve()) if local.exists() else tokenizer


def write_configs(
    options: IsolationOptions,
    output: Path,
    venv: Path | None,
    model: str = "sim-model",
    *,
    tokenizer: str | None = None,
    model_servers: Sequence[str] = (),
    python: str = sys.executable,
) -> list[Path]:
    """One inference-perf config per treatment under ``output/inference-perf/``, plus
    ``run.sh`` running them in order with ``<venv>/bin/inference-perf`` and, given
    ``model_servers``, the sampler with ``python -m sluiceway``. No ``tokenizer`` is a
    :class:`ValueError`."""
    if not tokenizer:
        raise ValueError(NO_TOKENIZER)
    plan = options.plan()
    base = (options.endpoints or (DEFAULT_COORDINATOR,))[0]
    target = _Target(base, model, _tokenizer_ref(tokenizer), plan.output_tokens)
    rt_headers = {"x-llm-d-async-mode": "passthrough", "x-llm-d-tenant": "realtime"}
    as_headers = {"x-llm-d-async-mode": "wait", "x-llm-d-tenant": "batch"}
    duration = round(plan.realtime_seconds + plan.async_lead)
    asynchronous = {
        "type": "constant",
        "stages": [{"rate": plan.async_rate, "duration": duration}],
        "request_timeout": plan.async_timeout,
    }
    treatments: dict[str, dict[str, Any]] = {
        "async_only": _config(
            target,
            {
                **asynchronous,
                "stages": [{"rate": plan.async_rate, "duration": round(plan.async_only_seconds)}],
            },
            as_headers,
            False,
            "async_only",
        ),
    }
    for level in plan.levels:
        k = realtime_concurrency(level, options.capacity)
        rt = {
            "type": "concurrent",
            "stages": [{"concurrency_level": k, "num_requests": plan.realtime_requests(k)}],
            "request_timeout": 120,
        }
        treatments[f"baseline_{level}"] = _config(target, rt, rt_headers, True, f"baseline_{level}")
        treatments[f"mixed_{level}_async"] = _config(
            target, asynchronous, as_headers, False, f"mixed_{level}_async"
        )
        treatments[f"mixed_{level}_rt"] = _config(target, rt, rt_headers, True, f"mixed_{level}_rt")
    folder = output / "inference-perf"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, config in treatments.items():
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        written.append(path)
    sampler = _sampler_command(python, model_servers, base)
    written.append(_script(folder, list(treatments), venv, plan.async_lead, sampler, python))
    return written


def _sampler_command(python: str, model_servers: Sequence[str], router: str) -> str | None:
    """The sampler's command line with this interpreter (not whatever ``sluiceway`` is on the
    PATH when run.sh runs); None without model servers to sample."""
    if not model_servers:
        return None
    args = [python, "-m", "sluiceway", "bench", "isolation-sample"]
    args += ["--model-servers", ",".join(model_servers), "--router", router]
    return shlex.join([*args, "--output", SAMPLES_FILE])


# A treatment's wall start and stop (now) in <treatment>/harness.json, and one treatment run
# between the two.
_TREATMENT = """stamp() {{
    mkdir -p "$1"
    printf '{{"start": %s, "stop": %s, "clock_offset": %s}}\\n' "$2" "$(date +%s.%N)" \\
        "$({offset})" > "$1/{harness}"
}}
treatment() {{
    start=$(date +%s.%N)
    {tool} --config_file "$1.yaml"
    stamp "$1" "$start"
}}"""

# Whatever still runs in the background is stopped when the script ends, however it ends.
_CLEANUP = """pid= sampler=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
    if [ -n "$sampler" ]; then kill "$sampler" 2>/dev/null || true; wait "$sampler" || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM"""


def _sampler_lines(sampler: str | None) -> list[str]:
    """Start the sampler in the background, or say up front what the run will lack."""
    if sampler is None:
        return [
            "echo 'no --model-servers: samples.json will be missing (no pool, band or "
            "request-time samples; the saturation and dispatch-rate checks fail)' >&2"
        ]
    return [f"{sampler} & sampler=$!", "sleep 1  # a first sample before the first request"]


def _clock_offset(python: str) -> str:
    """A command printing wall minus monotonic time: inference-perf stamps with
    ``time.perf_counter``, which is the monotonic clock on Linux, so this shifts its records
    onto wall time exactly."""
    return shlex.join([python, "-c", "import time; print(time.time() - time.monotonic())"])


def _script(
    folder: Path,
    treatments: list[str],
    venv: Path | None,
    lead: float,
    sampler: str | None,
    python: str,
) -> Path:
    tool = shlex.quote(f"{venv}/bin/inference-perf") if venv else "inference-perf"
    lines = [
        "#!/bin/sh",
        "# Runs every treatment; mixed_<L>_async starts first, the realtime load after the lead.",
        "set -e",
        'cd "$(dirname "$0")"',
        _TREATMENT.format(tool=tool, harness=HARNESS_FILE, offset=_clock_offset(python)),
        _CLEANUP,
        *_sampler_lines(sampler),
    ]
    for name in treatments:
        if name.endswith("_rt"):
            continue
        if name.endswith("_async"):
            # inference-perf itself in the background (not a subshell), so cleanup reaches it
            lines += [
                "async_start=$(date +%s.%N)",
                f"{tool} --config_file {name}.yaml & pid=$!",
                f"sleep {lead:g}",
                f"treatment {name.replace('_async', '_rt')}",
                'wait "$pid"',
                "pid=",
                f'stamp {name} "$async_start"',
            ]
        else:
            lines.append(f"treatment {name}")
    path = folder / "run.sh"
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return path
