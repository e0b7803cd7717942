"""``prometheus-saturation``: the budget falls as the router's pool saturation S rises.

Reads ``1 - flow_control_pool_saturation{inference_pool=<pool>[,namespace=]}`` under the
router's current prefix (``llm_d_epp_``) or its deprecated one (``inference_extension_``),
preferring ``stage="effective"``. With v = 1 - S, the budget is 0 once v <= 1 - ``threshold``
and ``v - (1 - threshold)`` above it (upstream's formula: at S = 0 the budget is
``threshold``).

``fallback`` is written in saturation units, as upstream: an unset fallback keeps the gate
closed while blind (budget 0); a set one is turned into the budget that saturation would give,
with a log line at start-up.
"""

from __future__ import annotations

import logging

from sluiceway.config.gate_params import PrometheusSaturationParams
from sluiceway.gates.base import Gate
from sluiceway.gates.context import GateContext
from sluiceway.gates.metric import MetricGate, prometheus_source, signal_hub
from sluiceway.gates.pool_queries import saturation_queries
from sluiceway.signals.cascade import CascadeSource

__all__ = ["build", "saturation_budget"]

log = logging.getLogger(__name__)


def saturation_budget(v: float, threshold: float) -> float:
    """Budget for free share ``v`` = 1 - S."""
    floor = 1.0 - threshold
    return 0.0 if v <= floor else v - floor


def fallback_budget(params: PrometheusSaturationParams) -> float:
    """The fallback in budget units (unset: 0, closed)."""
    if params.fallback is None:
        return 0.0
    budget = saturation_budget(1.0 - params.fallback, params.threshold)
    log.info(
        "prometheus-saturation pool %s: fallback saturation %s means budget %s while blind",
        params.pool,
        params.fallback,
        budget,
    )
    return budget


def build(params: PrometheusSaturationParams, ctx: GateContext) -> Gate:
    hub = signal_hub(ctx)
    queries = saturation_queries(params.pool, params.namespace)
    source = CascadeSource(
        [prometheus_source(hub, q) for q in queries], name=f"saturation {params.pool}"
    )
    return MetricGate(
        hub,
        source,
        lambda v: saturation_budget(v, params.threshold),
        fallback=fallback_budget(params),
        threshold=params.threshold,
        name="prometheus-saturation",
        ctx=ctx,
        pool=params.pool,
    )
