"""``prometheus-budget``: the budget is the pool's free share D above a ``baseline`` B.

D comes from the first of three queries with a sample (the router's queue size over ready pods
x ``max_concurrency`` M, the per-pod queue size over M, vLLM's running requests over ready pods
x M). The budget is 0 while D <= B and D - B above it, so the gate closes at M x (1 - B)
requests per ready pod (95 at the defaults; logged at start-up). ``fallback`` in budget units,
default 0 (closed).
"""

from __future__ import annotations

import logging

from sluiceway.config.gate_params import PrometheusBudgetParams
from sluiceway.gates.base import Gate
from sluiceway.gates.context import GateContext
from sluiceway.gates.metric import MetricGate, prometheus_source, signal_hub
from sluiceway.gates.pool_queries import budget_queries
from sluiceway.signals.cascade import CascadeSource

__all__ = ["build", "free_share_budget"]

log = logging.getLogger(__name__)


def free_share_budget(free: float, baseline: float) -> float:
    return 0.0 if free <= baseline else free - baseline


def build(params: PrometheusBudgetParams, ctx: GateContext) -> Gate:
    hub = signal_hub(ctx)
    queries = budget_queries(params.pool, params.namespace, params.max_concurrency)
    source = CascadeSource(
        [prometheus_source(hub, q) for q in queries], name=f"budget {params.pool}"
    )
    log.info(
        "prometheus-budget pool %s: closesAtLoadPerReadyPod=%s",
        params.pool,
        params.max_concurrency * (1 - params.baseline),
    )
    return MetricGate(
        hub,
        source,
        lambda free: free_share_budget(free, params.baseline),
        fallback=params.fallback,
        threshold=params.baseline,
        name="prometheus-budget",
        ctx=ctx,
        pool=params.pool,
    )
