"""The one registry of gate and plugin type names.

Names are upstream's gate and plugin types plus sluiceway's own. An unknown name is a
configuration error. A known name whose implementation has not landed is valid in
``sluiceway check-config`` (a warning) and an error when a component starts.

Gate types are the names of :data:`sluiceway.config.gate_params.GATE_PARAMS`, each with its
parameter model (every gate type is implemented; ``sluiceway.gates.factory.BUILDERS`` builds
them). Plugin types add one line to :data:`IMPLEMENTED`, naming the pydantic model that
validates that type's own parameters. Sluiceway's own plugin types are added to
:data:`PLUGIN_TYPES` by their implementers as well.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Final, Literal

from pydantic import BaseModel, ValidationError

from sluiceway.config.gate_params import GATE_PARAMS
from sluiceway.config.strict import collect_warnings, config_error
from sluiceway.errors import ConfigError

__all__ = [
    "GATE_TYPES",
    "IMPLEMENTED",
    "PLUGIN_CATEGORIES",
    "PLUGIN_TYPES",
    "is_known",
    "params_model",
    "require_implemented",
    "validate_params",
]

GATE_TYPES: Final[frozenset[str]] = frozenset(GATE_PARAMS)

PLUGIN_CATEGORIES: Final = ("fairness", "ordering", "usage-limit", "detector", "producer", "scorer")

PLUGIN_TYPES: Final[dict[str, str]] = {
    "global-strict-fairness-policy": "fairness",
    "round-robin-fairness-policy": "fairness",
    "program-aware-fairness": "fairness",
    "fcfs-ordering-policy": "ordering",
    "edf-ordering-policy": "ordering",
    "slo-deadline-ordering-policy": "ordering",
    "static-usage-limit-policy": "usage-limit",
    "priority-holdback-policy": "usage-limit",
    "soft-reflective-ceiling-policy": "usage-limit",
    "utilization-detector": "detector",
    "concurrency-detector": "detector",
    "inflight-load-producer": "producer",
    "queue-scorer": "scorer",
    "kv-cache-utilization-scorer": "scorer",
    "prefix-cache-scorer": "scorer",
    # sluiceway's own, under names upstream does not use
    "token-fair-fairness-policy": "fairness",
    "adaptive-holdback-policy": "usage-limit",
}

# plugin type name -> "module.path:ParamsModel"; one line per implemented plugin type.
IMPLEMENTED: Final[dict[str, str]] = {
    "global-strict-fairness-policy": "sluiceway.config.flow_plugins:GlobalStrictParams",
    "round-robin-fairness-policy": "sluiceway.config.flow_plugins:RoundRobinParams",
    "token-fair-fairness-policy": "sluiceway.config.flow_plugins:TokenFairParams",
    "fcfs-ordering-policy": "sluiceway.config.flow_plugins:FCFSParams",
    "edf-ordering-policy": "sluiceway.config.flow_plugins:EDFParams",
    "slo-deadline-ordering-policy": "sluiceway.config.flow_plugins:SLODeadlineParams",
    "static-usage-limit-policy": "sluiceway.config.flow_plugins:StaticUsageLimitParams",
    "priority-holdback-policy": "sluiceway.config.flow_plugins:PriorityHoldbackParams",
    "soft-reflective-ceiling-policy": "sluiceway.config.flow_plugins:SoftReflectiveParams",
    "adaptive-holdback-policy": "sluiceway.config.flow_plugins:AdaptiveHoldbackParams",
    "utilization-detector": "sluiceway.config.flow_plugins:UtilizationDetectorParams",
    "concurrency-detector": "sluiceway.config.flow_plugins:ConcurrencyDetectorParams",
    "queue-scorer": "sluiceway.config.scorer_plugins:QueueScorerParams",
    "kv-cache-utilization-scorer": "sluiceway.config.scorer_plugins:KvCacheScorerParams",
    "prefix-cache-scorer": "sluiceway.config.scorer_plugins:PrefixCacheScorerParams",
}

Kind = Literal["gate", "plugin"]


def is_known(kind: Kind, name: str) -> bool:
    """True when ``name`` is a registered gate (or plugin) type name."""
    return name in (GATE_TYPES if kind == "gate" else PLUGIN_TYPES)


def params_model(name: str) -> type[BaseModel] | None:
    """The params model of an implemented type (imported on first use), else None."""
    if name in GATE_PARAMS:
        return GATE_PARAMS[name]
    target = IMPLEMENTED.get(name)
    if target is None:
        return None
    module_name, _, attr = target.partition(":")
    model = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"{target} is not a pydantic model")
    return model


def _unknown(kind: Kind, name: str, field: str) -> ConfigError:
    names = sorted(GATE_TYPES if kind == "gate" else PLUGIN_TYPES)
    return ConfigError(f"unknown {kind} type {name!r} (known: {', '.join(names)})", field=field)


def validate_params(
    kind: Kind,
    name: str,
    params: Mapping[str, object],
    *,
    field: str,
    type_field: str | None = None,
) -> tuple[BaseModel | None, list[str]]:
    """Validate a type's parameters.

    ``field`` is the dotted path of the parameters (errors inside them extend it);
    ``type_field`` (default ``field``) is the path reported for an unknown type name. Returns
    the validated params (None when the type is known but not implemented yet) and warnings.
    Raises ConfigError for an unknown type name or invalid parameters.
    """
    if not is_known(kind, name):
        raise _unknown(kind, name, type_field or field)
    model = params_model(name)
    if model is None:
        where = type_field or field
        return None, [f"{where}: {kind} type {name!r} is known but not implemented yet"]
    try:
        validated = model.model_validate(dict(params))
    except ValidationError as exc:
        raise config_error(exc, field) from None
    return validated, collect_warnings(validated, field)


def require_implemented(name: str, *, field: str) -> None:
    """Raise ConfigError unless ``name`` is implemented (components call this at start-up)."""
    if params_model(name) is not None:
        return
    kind: Kind = "gate" if name in GATE_TYPES else "plugin"
    if not is_known(kind, name):
        raise _unknown(kind, name, field)
    raise ConfigError(f"{kind} type {name!r} is not implemented in this version", field=field)
