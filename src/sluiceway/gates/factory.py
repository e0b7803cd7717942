"""The one table of gate types and the builder that uses it.

:data:`BUILDERS` maps each gate type name to the function that builds it, imported from its
module, so jump-to-definition leads from a name to its gate. The names and their parameter
models are configuration's (:data:`sluiceway.config.gate_params.GATE_PARAMS`); a test keeps the
two tables the same. :func:`build_gate` validates the parameters with the type's model and
calls the builder; an unknown name is a configuration error. Combinators build the gates they
nest through ``ctx.build``, which leads back here, so no gate module imports this one.

Feedback gates (``aimd``) are collected while a chain is built: a top gate that nests some
and takes no answers itself comes back in a :class:`~sluiceway.gates.base.FeedbackRelay`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from pydantic import BaseModel

from sluiceway.config.registry import validate_params
from sluiceway.errors import ConfigError
from sluiceway.gates import (
    aimd,
    budget_key,
    composite,
    constant,
    endpoint_scrape,
    leased_rate,
    local_concurrency,
    prometheus_budget,
    prometheus_query,
    prometheus_saturation,
    quota,
    tier_priority,
    wait_on_refuse,
)
from sluiceway.gates.base import Feedback, Gate, with_feedback
from sluiceway.gates.context import GateBuilder, GateContext

__all__ = ["BUILDERS", "build_gate"]

BUILDERS: Final[Mapping[str, GateBuilder]] = {
    "constant": constant.build,
    "local-max-concurrency": local_concurrency.build,
    "redis-quota": quota.build,
    "sql-quota": quota.build,  # the same gate over the PostgreSQL store
    "prometheus-query": prometheus_query.build,
    "prometheus-saturation": prometheus_saturation.build,
    "prometheus-budget": prometheus_budget.build,
    "endpoint-scrape": endpoint_scrape.build,
    "redis": budget_key.build,
    "redis-leased-rate": leased_rate.build,
    "composite": composite.build,
    "wait-on-refuse": wait_on_refuse.build,
    "tier-priority-admission": tier_priority.build,
    "aimd": aimd.build,
}


def _params_dict(params: object, where: str) -> dict[str, Any]:
    if params is None or params == "":
        return {}
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError as exc:
            raise ConfigError(f"not valid JSON: {exc}", field=where) from None
    if not isinstance(params, Mapping):
        raise ConfigError("must be an object", field=where)
    return dict(params)


def build_gate(
    gate_type: str, params: object, ctx: GateContext, *, field: str = "gate_params"
) -> Gate | None:
    """The gate for ``gate_type`` with ``params`` (object or JSON string); None when no type."""
    observers: list[Feedback] = []
    gate = _build(gate_type, params, ctx, field, observers)
    return None if gate is None else with_feedback(gate, observers)


def _build(
    gate_type: str, params: object, ctx: GateContext, field: str, observers: list[Feedback]
) -> Gate | None:
    """One gate and the gates it nests, noting each feedback gate in ``observers``."""
    if not gate_type:
        return None
    model, _ = validate_params("gate", gate_type, _params_dict(params, field), field=field)
    if not isinstance(model, BaseModel):  # every gate type has a model (GATE_PARAMS)
        raise ConfigError(f"gate type {gate_type!r} has no parameters model", field=field)

    def nested(
        gate_type: str, params: object, ctx: GateContext, *, field: str = "gate_params"
    ) -> Gate | None:  # the ``ctx.build`` of the builder: what it nests is noted too
        return _build(gate_type, params, ctx, field, observers)

    gate = BUILDERS[gate_type](model, replace(ctx, build=nested))
    if isinstance(gate, Feedback):
        observers.append(gate)
    return gate
