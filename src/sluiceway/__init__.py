"""sluiceway: fair, priority- and quota-aware sharing of LLM model server pools.

The public names below are imported lazily, so ``import sluiceway.wire`` stays free of the heavy I/O
libraries (docs/design-rules.md rule 31) while ``from sluiceway import Processor`` still works.

Files (docs/architecture.md has the layers and the layout):

- ``cli``: the ``sluiceway`` command, one typer app (``__main__`` runs it for
  ``python -m sluiceway``); ``options``: the options every subcommand shares (time scale,
  ports, logs, broker address);
- ``cli_requests``: ``sluiceway publish``, ``results`` and ``cancel``; ``status``:
  ``sluiceway status``, what waits where, read from the broker; ``status_replicas``: the
  live router and processor replicas it lists; ``status_batches``: the unfinished batches;
- ``serving``: one uvicorn start and stop on a bound socket, for every sluiceway server;
  ``ports``: ``listening <name> <url>`` lines and the ``--ports-file`` JSON;
- ``clock``: one notion of time (``RealClock``, ``VirtualClock``); ``errors``: the error root
  ``SluicewayError`` and its small hierarchy;
- ``localservices``: private redis-server, Prometheus, PostgreSQL and Pub/Sub emulator processes
  for tests, benchmarks and the demo.

Packages: ``wire`` (the contracts with the outside world), ``config`` (configuration documents),
``observability`` (metric names, collectors, logging), ``broker`` (where queue entries, claims
and results live), ``gates`` (admission at queue and pool), ``signals`` (metric sources),
``flowcontrol`` (the router's flow controller), ``ledger`` (state several replicas of one pool
share in Redis: membership, capacity leases), ``processor`` (the async processor), ``router``
(the OpenAI-compatible gateway), ``coordinator`` (the HTTP front door), ``batch`` (the
OpenAI Batch API over the coordinator's queues), ``sim`` (a vLLM-like
simulated model server), ``demo`` (``sluiceway demo``) and ``bench`` (benchmark harnesses
shipped to users).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sluiceway.clock import Clock, RealClock, VirtualClock
from sluiceway.errors import (
    BrokerError,
    ConfigError,
    SluicewayError,
    UnsupportedError,
    WireError,
)

if TYPE_CHECKING:
    from sluiceway.broker.memory import MemoryBroker
    from sluiceway.flowcontrol.adapter import FlowAdapter
    from sluiceway.flowcontrol.controller import FlowController
    from sluiceway.processor.producer import Producer, request
    from sluiceway.processor.service import Processor
    from sluiceway.processor.specs import MergeSpec, PoolSpec, ProcessorSpec, QueueSpec
    from sluiceway.sim import SimConfig, running_simulator

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "MemoryBroker": "sluiceway.broker.memory",
    "FlowAdapter": "sluiceway.flowcontrol.adapter",
    "FlowController": "sluiceway.flowcontrol.controller",
    "MergeSpec": "sluiceway.processor.specs",
    "PoolSpec": "sluiceway.processor.specs",
    "Processor": "sluiceway.processor.service",
    "ProcessorSpec": "sluiceway.processor.specs",
    "Producer": "sluiceway.processor.producer",
    "QueueSpec": "sluiceway.processor.specs",
    "SimConfig": "sluiceway.sim",
    "request": "sluiceway.processor.producer",
    "running_simulator": "sluiceway.sim",
}

__all__ = [
    "BrokerError",
    "Clock",
    "ConfigError",
    "FlowAdapter",
    "FlowController",
    "MemoryBroker",
    "MergeSpec",
    "PoolSpec",
    "Processor",
    "ProcessorSpec",
    "Producer",
    "QueueSpec",
    "RealClock",
    "SimConfig",
    "SluicewayError",
    "UnsupportedError",
    "VirtualClock",
    "WireError",
    "__version__",
    "request",
    "running_simulator",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sluiceway' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
