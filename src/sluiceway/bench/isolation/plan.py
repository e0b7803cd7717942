"""What a run does: its options and the stage plan derived from them (pure).

The full plan is the nightly test's: realtime concurrency k = max(1, round(L/100 x C)) at
L = 20/80/90/100, max(k, ceil(k x 80 / 2.0)) realtime requests per stage, async at
max(10, round(2 C / 2.0)) req/s with a max(20, round(4 x 2.0)) s client timeout and a 15 s
warm-up; the async load leads the realtime load by one client patience, so the mixed window
(which opens a warm-up after the realtime start) sees the backlog at its steady state.
``quick`` runs one level with shorter stages but the same steady state (a lead of one patience
plus 5 s, 20 s of realtime load). Durations are in scaled seconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sluiceway.bench.isolation.modes import MODES

__all__ = ["FULL_LEVELS", "IsolationOptions", "StagePlan", "Topology", "realtime_concurrency"]

FULL_LEVELS = (20, 80, 90, 100)
QUICK_LEVEL = 80
SERVICE_S = 2.0  # the guide pool's service time for a 128-token completion
# The quick plan's async load leads by one client patience plus this, so every request of the
# mixed window meets a backlog whose oldest requests are already being abandoned (steady state).
QUICK_LEAD_MARGIN_S = 5.0
QUICK_REALTIME_S = 20.0


@dataclass(frozen=True)
class Topology:
    """How many router replicas and processors share the pool, and whether the routers share
    its capacity through the ledger. One of each (the default) runs everything in this process
    on the memory broker; more run each router as its own process, the queues and the ledger on
    a private Redis (:mod:`~sluiceway.bench.isolation.replicas`)."""

    routers: int = 1
    processors: int = 1
    ledger: bool = True

    def __post_init__(self) -> None:
        if self.routers < 1 or self.processors < 1:
            raise ValueError("--router-replicas and --processors must be at least 1")
        if not self.ledger and not self.replicated:
            raise ValueError("--no-ledger needs --router-replicas or --processors above 1")

    @property
    def replicated(self) -> bool:
        return self.routers > 1 or self.processors > 1

    def describe(self) -> dict[str, object]:
        """What the report records of it."""
        return {
            "router_replicas": self.routers,
            "processors": self.processors,
            "ledger": self.ledger,
        }


def realtime_concurrency(level: int, capacity: int) -> int:
    """k for level L (percent of C)."""
    return max(1, round(level / 100 * capacity))


@dataclass(frozen=True)
class StagePlan:
    """Durations of one run's stages (scaled seconds)."""

    levels: tuple[int, ...]
    realtime_seconds: float
    async_rate: float
    async_timeout: float
    async_lead: float  # the async load starts this long before the realtime load
    async_only_seconds: float
    warmup: float
    output_tokens: int = 128

    def realtime_requests(self, k: int) -> int:
        return max(k, math.ceil(k * self.realtime_seconds / SERVICE_S))


@dataclass(frozen=True)
class IsolationOptions:
    """How to run (see ``sluiceway bench isolation --help``)."""

    modes: tuple[str, ...] = MODES
    quick: bool = False
    levels: tuple[int, ...] | None = None
    capacity: int = 10
    time_scale: float = 1.0
    output: Path = Path("sluiceway-isolation")
    endpoints: tuple[str, ...] = ()  # real model servers instead of the simulator
    settings: dict[str, str] = field(default_factory=dict)  # AMT_* tolerance overrides
    realtime_seconds: float | None = None
    async_only_seconds: float | None = None
    # how long async runs alone before the realtime load starts; under one client patience
    # the mixed window opens before the backlog is at its steady state (the demo's short step)
    async_lead_seconds: float | None = None
    topology: Topology = Topology()

    def __post_init__(self) -> None:
        for mode in self.modes:
            if mode not in MODES:
                raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
        if self.time_scale <= 0:
            raise ValueError("time_scale must be positive")
        if self.capacity < 1:
            raise ValueError("capacity must be at least 1")

    def tolerance_env(self, mode_env: Mapping[str, str]) -> dict[str, str]:
        """The tolerance settings a run is judged by: the mode's, then the quick plan's
        warm-up (its stages are too short for the nightly's 15 s), then ``settings``."""
        quick = {"AMT_WARMUP_S": str(self.plan().warmup)} if self.quick else {}
        return {**mode_env, **quick, **self.settings}

    def plan(self) -> StagePlan:
        """The stage plan: the nightly's, or the quick one."""
        timeout = float(max(20, round(4 * SERVICE_S)))
        rate = float(max(10, round(2 * self.capacity / SERVICE_S)))
        if self.quick:
            return StagePlan(
                levels=self.levels or (QUICK_LEVEL,),
                realtime_seconds=self.realtime_seconds or QUICK_REALTIME_S,
                async_rate=rate,
                async_timeout=timeout,
                async_lead=_lead(self.async_lead_seconds, timeout + QUICK_LEAD_MARGIN_S),
                async_only_seconds=self.async_only_seconds or 10.0,
                warmup=3.0,
            )
        return StagePlan(
            levels=self.levels or FULL_LEVELS,
            realtime_seconds=self.realtime_seconds or 80.0,
            async_rate=rate,
            async_timeout=timeout,
            async_lead=_lead(self.async_lead_seconds, timeout),
            async_only_seconds=self.async_only_seconds or 140.0,
            warmup=15.0,
        )


def _lead(chosen: float | None, default: float) -> float:
    return default if chosen is None else chosen
