"""Gate types registered by name (decisions.md 6): ``type name -> "module:builder"``.

Parameters are validated by the type's params model, found through
:data:`sluiceway.config.registry.IMPLEMENTED`; the builder named here turns validated params
into a :class:`~sluiceway.gates.base.Gate`. A new gate type is one module plus one line here
and one line there; nothing else changes. Unknown names are configuration errors.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel

from sluiceway.clock import Clock
from sluiceway.config.registry import require_implemented, validate_params
from sluiceway.errors import ConfigError
from sluiceway.gates.base import Gate
from sluiceway.gates.quota_store import MemoryQuotaStore, QuotaStore

__all__ = ["GATE_BUILDERS", "GateBuilder", "GateContext", "build_gate", "memory_stores"]

GATE_BUILDERS: dict[str, str] = {
    "constant": "sluiceway.gates.constant:build",
    "local-max-concurrency": "sluiceway.gates.local_concurrency:build",
    "composite": "sluiceway.gates.composite:build",
    "wait-on-refuse": "sluiceway.gates.wait_on_refuse:build",
    "redis-quota": "sluiceway.gates.quota:build",
    "sql-quota": "sluiceway.gates.quota:build",
}


def memory_stores() -> Callable[[str], QuotaStore]:
    """One fresh in-process quota store, whatever address a gate names."""
    store = MemoryQuotaStore()
    return lambda address: store


@dataclass(frozen=True)
class GateContext:
    """What builders may use.

    ``workers``: W of the pool the gate guards (decisions.md 9); ``quota_store``: the counter
    store for a quota gate's ``address`` ("" = the processor's own backend); ``services``:
    shared clients other gate types need (metric sources), by name; ``labels``: the metric
    labels of the owner (queue_id, queue_name, pool_name).
    """

    clock: Clock
    workers: int = 1
    quota_store: Callable[[str], QuotaStore] = field(default_factory=memory_stores)
    services: Mapping[str, object] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)


GateBuilder = Callable[[Any, GateContext], Gate]


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


def _builder(gate_type: str, where: str) -> GateBuilder:
    target = GATE_BUILDERS.get(gate_type)
    if target is None:
        raise ConfigError(
            f"gate type {gate_type!r} is not implemented in this version", field=where
        )
    module_name, _, attr = target.partition(":")
    return cast(GateBuilder, getattr(importlib.import_module(module_name), attr))


def build_gate(
    gate_type: str, params: object, ctx: GateContext, *, field: str = "gate_params"
) -> Gate | None:
    """The gate for ``gate_type`` with ``params`` (object or JSON string); None when no type."""
    if not gate_type:
        return None
    require_implemented(gate_type, field=field)
    model, _ = validate_params("gate", gate_type, _params_dict(params, field), field=field)
    if not isinstance(model, BaseModel):
        raise ConfigError(f"gate type {gate_type!r} has no parameters model", field=field)
    return _builder(gate_type, field)(model, ctx)
