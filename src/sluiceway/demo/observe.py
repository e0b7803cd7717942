"""What the model server sees: when each request started running, by objective.

Subscribes to the simulator's label counts, so every start is seen exactly, with no sampling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from sluiceway.clock import Clock
from sluiceway.sim.engine import Engine

__all__ = ["Observation", "observing"]


@dataclass
class Observation:
    """Start times (scaled seconds) of running requests, per value of one header."""

    header: str
    starts: dict[str, list[float]] = field(default_factory=dict)

    def last_start(self, label: str) -> float | None:
        times = self.starts.get(label)
        return max(times) if times else None


@contextlib.contextmanager
def observing(engine: Engine, header: str, clock: Clock) -> Iterator[Observation]:
    """Record every start on ``engine`` while the block runs."""
    obs = Observation(header)

    def on_change(delta: int, labels: tuple[tuple[str, str], ...]) -> None:
        if delta > 0:
            obs.starts.setdefault(dict(labels).get(header, ""), []).append(clock.now())

    unsubscribe = engine.labels.subscribe(on_change)
    try:
        yield obs
    finally:
        unsubscribe()
