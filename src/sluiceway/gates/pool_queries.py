"""PromQL text for the pool gates: label matchers and the upstream queries, built in one place."""

from __future__ import annotations

from sluiceway.observability.names import (
    INFERENCE_POOL_READY_PODS,
    ROUTER_DEPRECATED_PREFIX,
    ROUTER_PREFIX,
)

__all__ = ["budget_queries", "matchers", "saturation_queries"]

_SATURATION = "flow_control_pool_saturation"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def matchers(**labels: str) -> str:
    """``{a="x",b="y"}`` for the non-empty labels (in the order given)."""
    inner = ",".join(f"{k}={_quote(v)}" for k, v in labels.items() if v)
    return "{" + inner + "}"


def saturation_queries(pool: str, namespace: str) -> list[str]:
    """``1 - pool saturation``: the current prefix before the deprecated one, the effective
    stage before an unstaged series."""
    out = []
    for prefix in (ROUTER_PREFIX, ROUTER_DEPRECATED_PREFIX):
        metric = prefix + _SATURATION
        out.append(
            f"1 - {metric}{matchers(inference_pool=pool, namespace=namespace, stage='effective')}"
        )
        out.append(f"1 - {metric}{matchers(inference_pool=pool, namespace=namespace)}")
    return out


def budget_queries(pool: str, namespace: str, max_concurrency: int) -> list[str]:
    """Upstream's three free-capacity queries, first with a sample wins: the router's queue
    size over ready pods x M, the per-pod queue size over M, and vLLM's running requests."""
    by_pool = matchers(inference_pool=pool, namespace=namespace)
    by_name = matchers(name=pool, namespace=namespace)
    m = max_concurrency
    queue = f"{ROUTER_DEPRECATED_PREFIX}flow_control_queue_size"
    ready = f"{INFERENCE_POOL_READY_PODS}{by_name}"
    return [
        f"1 - (sum by(inference_pool)({queue}{by_pool}) / on() ({ready} * {m}))",
        f"1 - (avg by(name)(inference_pool_per_pod_queue_size{by_name}) / {m})",
        f"1 - (sum(vllm:num_requests_running{by_pool}) / on() ({ready} * {m}))",
    ]
