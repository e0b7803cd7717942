"""``/metrics`` of one simulated server: vLLM's names in the Prometheus text format (0.0.4).

Every ``vllm:`` series carries vLLM's labels, ``model_name`` and ``engine`` (the engine core's
index inside one server; always ``0`` here, as one vLLM server without data parallelism).

Not OpenMetrics, which would rewrite ``vllm:`` to ``vllm_`` and break every dashboard and gate
that reads vLLM's names. Rendered straight from the engine's live state and ``EngineStats`` on
each scrape.
"""

from __future__ import annotations

from collections.abc import Iterable

from sluiceway.observability import names
from sluiceway.sim.engine import Engine
from sluiceway.sim.loop_lag import LoopLagProbe
from sluiceway.sim.stats import Histogram

__all__ = ["CONTENT_TYPE", "render_metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Labels = tuple[tuple[str, str], ...]


ENGINE_INDEX = "0"


def render_metrics(engine: Engine, *, lag: LoopLagProbe | None = None) -> str:
    """The full exposition text for ``engine`` (and the loop lag, when probed)."""
    lines: list[str] = []
    _gauges(lines, engine)
    _counters(lines, engine)
    _histograms(lines, engine)
    _label_gauge(lines, engine)
    if lag is not None:
        _family(lines, names.SIM_EVENT_LOOP_LAG, "gauge", "Event loop lag, wall seconds.")
        lines.append(_sample(names.SIM_EVENT_LOOP_LAG, (), lag.lag))
    lines.append("")
    return "\n".join(lines)


def _vllm_labels(engine: Engine) -> Labels:
    model_name, engine_index = names.VLLM_LABELS
    return ((model_name, engine.config.model), (engine_index, ENGINE_INDEX))


def _gauges(lines: list[str], engine: Engine) -> None:
    model = _vllm_labels(engine)
    _family(lines, names.VLLM_NUM_REQUESTS_RUNNING, "gauge", "Requests holding a batch slot.")
    lines.append(_sample(names.VLLM_NUM_REQUESTS_RUNNING, model, engine.num_running))
    _family(lines, names.VLLM_NUM_REQUESTS_WAITING, "gauge", "Requests in the waiting queue.")
    lines.append(_sample(names.VLLM_NUM_REQUESTS_WAITING, model, engine.num_waiting))
    for name in (names.VLLM_KV_CACHE_USAGE_PERC, names.VLLM_GPU_CACHE_USAGE_PERC_LEGACY):
        _family(lines, name, "gauge", "Fraction of KV-cache blocks in use (0..1).")
        lines.append(_sample(name, model, engine.kv_usage))
    info = (
        ("block_size", str(engine.pool.block_size)),
        ("num_gpu_blocks", str(engine.pool.num_blocks)),
        ("enable_prefix_caching", str(engine.pool.prefix_caching)),
    )
    # As vLLM: the cache settings and the engine index, without model_name.
    _family(lines, names.VLLM_CACHE_CONFIG_INFO, "gauge", "KV-cache configuration.")
    lines.append(_sample(names.VLLM_CACHE_CONFIG_INFO, (*info, ("engine", ENGINE_INDEX)), 1))


def _counters(lines: list[str], engine: Engine) -> None:
    model = _vllm_labels(engine)
    stats = engine.stats
    plain = (
        (names.VLLM_PROMPT_TOKENS_TOTAL, "Prompt tokens prefilled.", stats.prompt_tokens),
        (names.VLLM_GENERATION_TOKENS_TOTAL, "Tokens generated.", stats.generation_tokens),
        (names.VLLM_NUM_PREEMPTIONS_TOTAL, "Requests preempted.", stats.preemptions),
        (names.VLLM_PREFIX_CACHE_QUERIES_TOTAL, "Tokens looked up.", stats.prefix_cache_queries),
        (names.VLLM_PREFIX_CACHE_HITS_TOTAL, "Tokens found cached.", stats.prefix_cache_hits),
    )
    for name, doc, value in plain:
        _family(lines, name, "counter", doc)
        lines.append(_sample(name, model, value))
    name = names.VLLM_REQUEST_SUCCESS_TOTAL
    _family(lines, name, "counter", "Finished requests by finish reason.")
    for reason in sorted({"stop", "length", "abort", *stats.finished}):
        lines.append(_sample(name, (*model, ("finished_reason", reason)), stats.finished[reason]))


def _histograms(lines: list[str], engine: Engine) -> None:
    model = _vllm_labels(engine)
    stats = engine.stats
    families = (
        (names.VLLM_TTFT_SECONDS, "Time to first token, as delivered (s).", stats.ttft),
        (names.VLLM_ITL_SECONDS, "Time between tokens, as delivered (s).", stats.itl),
        (names.VLLM_E2E_SECONDS, "End-to-end request latency, as delivered (s).", stats.e2e),
        (names.VLLM_QUEUE_TIME_SECONDS, "Time spent waiting (s).", stats.queue_time),
        (names.VLLM_REQUEST_PREFILL_TIME_SECONDS, "Time in prefill (s).", stats.prefill_time),
        (names.VLLM_REQUEST_DECODE_TIME_SECONDS, "Time in decode (s).", stats.decode_time),
        (names.VLLM_REQUEST_INFERENCE_TIME_SECONDS, "Time running (s).", stats.inference_time),
        (names.VLLM_REQUEST_PROMPT_TOKENS, "Prompt tokens per request.",
         stats.prompt_tokens_per_request),
        (names.VLLM_REQUEST_GENERATION_TOKENS, "Generated tokens per request.",
         stats.generation_tokens_per_request),
        (names.VLLM_REQUEST_PARAMS_MAX_TOKENS, "The max_tokens request parameter.",
         stats.max_tokens_param),
        (names.VLLM_ITERATION_TOKENS, "Tokens computed per engine step.",
         stats.iteration_tokens),
    )  # fmt: skip
    for name, doc, hist in families:
        _family(lines, name, "histogram", doc)
        lines.extend(_histogram_samples(name, model, hist))
    name = names.SIM_TOKEN_LATENESS
    _family(lines, name, "histogram", "Token delivery after its scheduled time (s).")
    lines.extend(_histogram_samples(name, model, stats.lateness))


def _histogram_samples(name: str, labels: Labels, hist: Histogram) -> Iterable[str]:
    for bound, count in hist.cumulative():
        le = "+Inf" if bound == float("inf") else repr(float(bound))
        yield _sample(name + "_bucket", (*labels, ("le", le)), count)
    yield _sample(name + "_sum", labels, hist.total)
    yield _sample(name + "_count", labels, hist.count)


def _label_gauge(lines: list[str], engine: Engine) -> None:
    name = names.SIM_RUNNING_BY_LABEL
    _family(lines, name, "gauge", "Running requests by the value of a chosen request header.")
    for header in engine.labels.headers:
        for value, count in sorted(engine.running_by_label(header).items()):
            lines.append(_sample(name, (("header", header), ("value", value)), count))


def _family(lines: list[str], name: str, kind: str, doc: str) -> None:
    lines.append(f"# HELP {name} {doc}")
    lines.append(f"# TYPE {name} {kind}")


def _sample(name: str, labels: Labels, value: float) -> str:
    if not labels:
        return f"{name} {_number(value)}"
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return f"{name}{{{body}}} {_number(value)}"


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
