"""What the model server sees: peak in-flight per objective and when each request started.

The simulator offers no push events for admissions, so the observer samples the engine at a
short wall interval; at the demo's time scale that is well below one generated token.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from sluiceway.clock import Clock
from sluiceway.sim.engine import Engine

__all__ = ["Observation", "observing"]

_SAMPLE_EVERY_S = 0.002


@dataclass
class Observation:
    """Request id -> (first time seen running, its label value), scaled seconds."""

    header: str
    started: dict[str, tuple[float, str]] = field(default_factory=dict)

    def last_start(self, label: str) -> float | None:
        times = [t for t, value in self.started.values() if value == label]
        return max(times) if times else None


def _sample(engine: Engine, obs: Observation, now: float) -> None:
    for rid in engine.running_ids():
        if rid in obs.started:
            continue
        seq = engine.sequence(rid)
        if seq is not None:
            obs.started[rid] = (now, dict(seq.request.labels).get(obs.header, ""))


@contextlib.asynccontextmanager
async def observing(engine: Engine, header: str, clock: Clock) -> AsyncIterator[Observation]:
    """Sample ``engine`` while the block runs."""
    obs = Observation(header)

    async def loop() -> None:
        while True:
            _sample(engine, obs, clock.now())
            await asyncio.sleep(_SAMPLE_EVERY_S)

    task = asyncio.create_task(loop())
    try:
        yield obs
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
