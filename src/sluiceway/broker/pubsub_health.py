"""Readiness of a Pub/Sub consumer from its RPCs (pure).

An idle subscription delivers nothing, so arrivals cannot tell a healthy consumer from a dead
one. The pullers' RPCs can: a pull that returns (even empty) proves the subscription answers.
A failure more recent than the last success, within ``window`` seconds, is unhealthy; a success
within the window is healthy; with neither, the caller probes actively.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

__all__ = ["RpcHealth", "Standing"]


class Standing(Enum):
    """What the recorded RPCs say."""

    HEALTHY = "healthy"
    FAILING = "failing"
    UNKNOWN = "unknown"  # nothing recent: probe


@dataclass(slots=True)
class RpcHealth:
    """Last success and last failure (monotonic seconds) of one consumer's RPCs."""

    window: float = 30.0
    last_success: float | None = None
    last_failure: float | None = None
    last_error: str = ""

    def succeeded(self, now: float) -> None:
        self.last_success = now

    def failed(self, now: float, error: str) -> None:
        self.last_failure = now
        self.last_error = error

    def standing(self, now: float) -> Standing:
        failure = self.last_failure if self.last_failure is not None else -math.inf
        success = self.last_success if self.last_success is not None else -math.inf
        if now - failure <= self.window and success < failure:
            return Standing.FAILING
        if now - success <= self.window:
            return Standing.HEALTHY
        return Standing.UNKNOWN
