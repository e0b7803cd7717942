"""``redis``: the budget is a number an operator writes to a Redis key.

Parameters: ``address`` (required, ``host:port`` or a ``redis://`` URL), ``budget_key``
(default ``dispatch-gate-budget``), ``fallback`` (ours; budget while Redis cannot be read,
default 0: closed). A missing or unparsable key reads 1 (open), as upstream; values are
clamped to [0, 1]. The key is read by the shared refresher, not once per message.
"""

from __future__ import annotations

from pydantic import Field

from sluiceway.config.base import StrictModel
from sluiceway.config.params import FlexFloat
from sluiceway.gates.base import Gate
from sluiceway.gates.factory import GateContext, register_gate
from sluiceway.gates.metric import MetricGate, clamp01, signal_hub
from sluiceway.gates.redis_backend import redis_backend

__all__ = ["BudgetKeyParams", "build"]


class BudgetKeyParams(StrictModel):
    address: str = Field(min_length=1)
    budget_key: str = Field(default="dispatch-gate-budget", min_length=1)
    fallback: FlexFloat = Field(default=0.0, ge=0.0, le=1.0)


@register_gate("redis", BudgetKeyParams)
def build(params: BudgetKeyParams, ctx: GateContext) -> Gate:
    source = redis_backend(ctx, "redis").budget_key(params.address, params.budget_key)
    return MetricGate(
        signal_hub(ctx), source, clamp01, fallback=params.fallback, name="redis", ctx=ctx
    )
