"""``prometheus-query``: the budget is a PromQL expression's value, clamped to [0, 1].

Parameters: ``query`` (required, sent verbatim), ``fallback`` (budget while blind, default 0:
closed), ``pool`` (only labels the gate's metrics as ``inference_pool``).
"""

from __future__ import annotations

from sluiceway.config.gate_params import PrometheusQueryParams
from sluiceway.gates.base import Gate
from sluiceway.gates.context import GateContext
from sluiceway.gates.metric import MetricGate, clamp01, prometheus_source, signal_hub

__all__ = ["build"]


def build(params: PrometheusQueryParams, ctx: GateContext) -> Gate:
    hub = signal_hub(ctx)
    return MetricGate(
        hub,
        prometheus_source(hub, params.query),
        clamp01,
        fallback=params.fallback,
        name="prometheus-query",
        ctx=ctx,
        pool=params.pool,
    )
