"""``local-max-concurrency``: at most ``limit`` requests in flight through this gate, counted
in this process (replicas multiply the limit; use ``redis-quota`` for a shared one).

``gating_mode`` ``classifying`` (upstream's default, a misnomer) refuses over the limit;
``blocking`` answers Wait, so a pool worker parks until a slot frees.
"""

from __future__ import annotations

from sluiceway.config.gate_params import LocalMaxConcurrencyParams
from sluiceway.gates.base import CONTINUE, REFUSE, WAIT, Decision, Gate, GateRequest, Holdings
from sluiceway.gates.context import GateContext

__all__ = ["LocalConcurrencyGate", "build"]


class LocalConcurrencyGate:
    """An in-process counter; each admission holds one slot until its release runs."""

    def __init__(self, limit: int, *, blocking: bool = False) -> None:
        self._limit = limit
        self._blocking = blocking
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def budget(self, now: float) -> float:
        return max(0.0, (self._limit - self._in_flight) / self._limit)

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        if self._in_flight >= self._limit:
            return WAIT if self._blocking else REFUSE
        self._in_flight += 1
        released = False

        async def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._in_flight -= 1

        holdings.add(release)
        return CONTINUE

    async def aclose(self) -> None:
        return None


def build(params: LocalMaxConcurrencyParams, ctx: GateContext) -> Gate:
    return LocalConcurrencyGate(params.limit, blocking=params.gating_mode == "blocking")
