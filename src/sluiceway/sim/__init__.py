"""A vLLM-like simulated model server: continuous batching, KV cache, preemption, metrics.

``running_simulator(SimConfig(...), instances=K, clock=...)`` serves K engines on loopback;
``sluiceway sim`` does the same from the command line. See docs/simulator.md.
"""

from __future__ import annotations

from sluiceway.sim.config import SimConfig
from sluiceway.sim.engine import Engine
from sluiceway.sim.sequence import Admission, SimRequest
from sluiceway.sim.server import SimPool, running_simulator

__all__ = ["Admission", "Engine", "SimConfig", "SimPool", "SimRequest", "running_simulator"]
