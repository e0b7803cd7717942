"""``prometheus-query``: the budget is a PromQL expression's value, clamped to [0, 1].

Parameters: ``query`` (required, sent verbatim), ``fallback`` (budget while blind, default 0:
closed), ``pool`` (only labels the gate's metrics as ``inference_pool``).
"""

from __future__ import annotations

from pydantic import Field

from sluiceway.config.base import StrictModel
from sluiceway.config.params import FlexFloat
from sluiceway.gates.base import Gate
from sluiceway.gates.factory import GateContext, register_gate
from sluiceway.gates.metric import MetricGate, clamp01, prometheus_source, signal_hub

__all__ = ["PrometheusQueryParams", "build"]


class PrometheusQueryParams(StrictModel):
    query: str = Field(min_length=1)
    fallback: FlexFloat = Field(default=0.0, ge=0.0, le=1.0)
    pool: str = ""


@register_gate("prometheus-query", PrometheusQueryParams)
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
