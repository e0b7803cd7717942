"""``redis``: the budget is a number an operator writes to a Redis key.

Parameters: ``address`` (required, ``host:port`` or a ``redis://`` URL), ``budget_key``
(default ``dispatch-gate-budget``), ``fallback`` (ours; budget while Redis cannot be read,
default 0: closed). A missing or unparsable key reads 1 (open), as upstream; values are
clamped to [0, 1]. The key is read by the shared refresher, not once per message.
"""

from __future__ import annotations

from sluiceway.config.gate_params import BudgetKeyParams
from sluiceway.gates.base import Gate
from sluiceway.gates.context import GateContext
from sluiceway.gates.metric import MetricGate, clamp01, signal_hub
from sluiceway.gates.redis_backend import redis_backend

__all__ = ["build"]


def build(params: BudgetKeyParams, ctx: GateContext) -> Gate:
    source = redis_backend(ctx, "redis").budget_key(params.address, params.budget_key)
    return MetricGate(
        signal_hub(ctx), source, clamp01, fallback=params.fallback, name="redis", ctx=ctx
    )
