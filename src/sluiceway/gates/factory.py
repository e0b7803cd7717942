"""Building gates from configs: each gate module registers its builder where it is defined.

A gate module declares its type with :func:`register_gate`::

    @register_gate("constant", ConstantParams)
    def build(params: ConstantParams, ctx: GateContext) -> Gate: ...

The type name must be one of the names of :mod:`sluiceway.config.registry` (the one list of
type names, which also holds names not built yet so that ``check-config`` can warn about them).
:func:`build_gate` validates the parameters with the registered model and calls the builder.
Unknown names are configuration errors.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from sluiceway.clock import Clock
from sluiceway.config.registry import GATE_TYPES, require_implemented, validate_params
from sluiceway.errors import ConfigError
from sluiceway.gates.base import Gate
from sluiceway.gates.quota_store import MemoryQuotaStore, QuotaStore

__all__ = [
    "GateBuilder",
    "GateContext",
    "build_gate",
    "gate_params_model",
    "load_gate_modules",
    "memory_stores",
    "register_gate",
]


def memory_stores() -> Callable[[str], QuotaStore]:
    """One fresh in-process quota store, whatever address a gate names."""
    store = MemoryQuotaStore()
    return lambda address: store


def _no_wake() -> None:
    return None


@dataclass(frozen=True)
class GateContext:
    """What builders may use.

    ``workers``: W of the pool the gate guards (the budget becomes the in-flight target
    ``ceil(b x W)``); ``quota_store``: the counter store for a quota gate's ``address`` ("" =
    the processor's own backend); ``services``: shared clients other gate types need (the
    signal hub, Redis gate stores), by name; ``labels``: the metric labels of the owner
    (queue_id, queue_name, pool_name); ``wake``: called when a gate's signal changes, so
    parked workers re-try their gate at once.
    """

    clock: Clock
    workers: int = 1
    quota_store: Callable[[str], QuotaStore] = field(default_factory=memory_stores)
    services: Mapping[str, object] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    wake: Callable[[], None] = _no_wake


GateBuilder = Callable[[Any, GateContext], Gate]
_Builder = TypeVar("_Builder", bound=Callable[..., Gate])


@dataclass(frozen=True, slots=True)
class _GateType:
    params: type[BaseModel]
    build: GateBuilder


_GATES: dict[str, _GateType] = {}
_loaded = False


def register_gate(name: str, params: type[BaseModel]) -> Callable[[_Builder], _Builder]:
    """Register the decorated function as the builder of gate type ``name``."""
    if name not in GATE_TYPES:
        raise ValueError(f"gate type {name!r} is not in sluiceway.config.registry.GATE_TYPES")

    def decorate(builder: _Builder) -> _Builder:
        known = _GATES.get(name)
        if known is not None and known.build is not builder:
            raise ValueError(f"gate type {name!r} is registered twice")
        _GATES[name] = _GateType(params, builder)
        return builder

    return decorate


def load_gate_modules() -> None:
    """Import every module of this package once, so that each registers its gate type."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    package = importlib.import_module(__package__ or "sluiceway.gates")
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")


def gate_params_model(name: str) -> type[BaseModel] | None:
    """The params model of a built gate type, None when ``name`` is not built."""
    load_gate_modules()
    gate = _GATES.get(name)
    return None if gate is None else gate.params


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
    if not gate_type:
        return None
    require_implemented(gate_type, field=field)
    model, _ = validate_params("gate", gate_type, _params_dict(params, field), field=field)
    if not isinstance(model, BaseModel):
        raise ConfigError(f"gate type {gate_type!r} has no parameters model", field=field)
    return _GATES[gate_type].build(model, ctx)
