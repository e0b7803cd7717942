"""What a gate builder is given: the clock, the pool's size, the quota stores, shared services,
metric labels, a wake-up, and the registry's own ``build`` for the gates a combinator nests.

Nested building goes through the context rather than an import of the registry, so that the
registry (``factory.py``) can import every gate module and no gate module imports it back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sluiceway.clock import Clock
from sluiceway.errors import ConfigError
from sluiceway.gates.base import Gate
from sluiceway.gates.pool_share import SOLE, PoolShare
from sluiceway.gates.quota_store import MemoryQuotaStore, QuotaStore

__all__ = [
    "GAUGES_SERVICE",
    "REDIS_GATES_SERVICE",
    "SIGNALS_SERVICE",
    "BuildGate",
    "GateBuilder",
    "GateContext",
    "memory_stores",
]

# The keys of ``GateContext.services``: what the process that builds gates hands them.
SIGNALS_SERVICE = "signals"  # the process's SignalHub (metric gates share its sources)
GAUGES_SERVICE = "gate_gauges"  # where metric gates export what they read (SignalGauges)
REDIS_GATES_SERVICE = "redis_gates"  # the Redis clients of the Redis-backed gates


def memory_stores() -> Callable[[str], QuotaStore]:
    """One fresh in-process quota store, whatever address a gate names."""
    store = MemoryQuotaStore()
    return lambda address: store


def _no_wake() -> None:
    return None


def _alone() -> PoolShare:
    return SOLE


class BuildGate(Protocol):
    """The registry's builder: a gate for ``gate_type`` and its params (None when no type)."""

    def __call__(
        self, gate_type: str, params: object, ctx: GateContext, *, field: str = ...
    ) -> Gate | None: ...


def _no_registry(gate_type: str, params: object, ctx: GateContext, *, field: str = "") -> None:
    raise ConfigError("nested gates are built through sluiceway.gates.factory", field=field)


@dataclass(frozen=True)
class GateContext:
    """What builders may use.

    ``workers``: W of the pool the gate guards (the budget becomes the in-flight target
    ``ceil(b x W)``); ``quota_store``: the counter store for a quota gate's ``address`` ("" =
    the processor's own backend); ``services``: shared clients other gate types need (the
    signal hub, Redis gate stores), by name; ``labels``: the metric labels of the owner
    (queue_id, queue_name, pool_name); ``wake``: called when a gate's signal changes, so
    parked workers re-try their gate at once; ``build``: the registry's builder, for the gates
    a combinator nests (set by the registry when it builds); ``share``: this processor's
    place among the live processors of the pool (``pool_share``), read at each decision.
    """

    clock: Clock
    workers: int = 1
    quota_store: Callable[[str], QuotaStore] = field(default_factory=memory_stores)
    services: Mapping[str, object] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    wake: Callable[[], None] = _no_wake
    build: BuildGate = _no_registry
    share: Callable[[], PoolShare] = _alone


GateBuilder = Callable[[Any, GateContext], Gate]
