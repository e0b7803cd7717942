"""``prometheus-budget``: the budget is the pool's free share D above a ``baseline`` B.

D comes from the first of three queries with a sample (the router's queue size over ready pods
x ``max_concurrency`` M, the per-pod queue size over M, vLLM's running requests over ready pods
x M). The budget is 0 while D <= B and D - B above it, so the gate closes at M x (1 - B)
requests per ready pod (95 at the defaults; logged at start-up). ``fallback`` in budget units,
default 0 (closed).
"""

from __future__ import annotations

import logging

from pydantic import Field

from sluiceway.config.base import StrictModel
from sluiceway.config.params import FlexFloat, FlexInt
from sluiceway.gates.base import Gate
from sluiceway.gates.factory import GateContext, register_gate
from sluiceway.gates.metric import MetricGate, prometheus_source, signal_hub
from sluiceway.gates.pool_queries import budget_queries
from sluiceway.signals.cascade import CascadeSource

__all__ = ["PrometheusBudgetParams", "build", "free_share_budget"]

log = logging.getLogger(__name__)


class PrometheusBudgetParams(StrictModel):
    pool: str = Field(min_length=1)
    namespace: str = ""
    max_concurrency: FlexInt = Field(default=100, gt=0)
    baseline: FlexFloat = Field(default=0.05, ge=0.0, lt=1.0)
    fallback: FlexFloat = Field(default=0.0, ge=0.0, le=1.0)


def free_share_budget(free: float, baseline: float) -> float:
    return 0.0 if free <= baseline else free - baseline


@register_gate("prometheus-budget", PrometheusBudgetParams)
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
