"""Parameter models of the flow-control plugin types (registered in ``config/registry.py``).

Each model validates one plugin's ``parameters`` block (camelCase keys, unknown keys rejected)
and builds the policy or detector it configures.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sluiceway.config.base import CamelModel
from sluiceway.config.params import Duration
from sluiceway.flowcontrol.fairness import GlobalStrict, RoundRobin, TokenFair
from sluiceway.flowcontrol.ordering import EDF, FCFS, SLODeadline
from sluiceway.flowcontrol.saturation import ConcurrencyDetector, UtilizationDetector
from sluiceway.flowcontrol.usage import (
    AdaptiveHoldback,
    PriorityHoldback,
    SoftReflective,
    StaticUsageLimit,
)

__all__ = [
    "AdaptiveHoldbackParams",
    "ConcurrencyDetectorParams",
    "EDFParams",
    "FCFSParams",
    "GlobalStrictParams",
    "PriorityHoldbackParams",
    "RoundRobinParams",
    "SLODeadlineParams",
    "SoftReflectiveParams",
    "StaticUsageLimitParams",
    "TokenFairParams",
    "UtilizationDetectorParams",
]


class GlobalStrictParams(CamelModel):
    def build(self) -> GlobalStrict:
        return GlobalStrict()


class RoundRobinParams(CamelModel):
    def build(self) -> RoundRobin:
        return RoundRobin()


class TokenFairParams(CamelModel):
    """Weights of prompt and output tokens in a request's charge (VTC defaults 1 and 2)."""

    input_token_weight: float = Field(default=1.0, ge=0)
    output_token_weight: float = Field(default=2.0, ge=0)

    def build(self) -> TokenFair:
        return TokenFair(self.input_token_weight, self.output_token_weight)


class FCFSParams(CamelModel):
    def build(self) -> FCFS:
        return FCFS()


class EDFParams(CamelModel):
    def build(self) -> EDF:
        return EDF()


class SLODeadlineParams(CamelModel):
    def build(self) -> SLODeadline:
        return SLODeadline()


class StaticUsageLimitParams(CamelModel):
    threshold: float = Field(default=1.0, ge=0)

    def build(self) -> StaticUsageLimit:
        return StaticUsageLimit(self.threshold)


class PriorityHoldbackParams(CamelModel):
    """``minCeiling`` is required, in [0, 1); ``maxCeiling`` in (0, 1]; ``ceilings`` (by
    priority) only with ``domain: explicit``."""

    shape: Literal["linear"] = "linear"
    domain: Literal["rank", "value", "explicit"] = "rank"
    min_ceiling: float = Field(ge=0, lt=1)
    max_ceiling: float = Field(default=1.0, gt=0, le=1)
    ceilings: dict[int, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> PriorityHoldbackParams:
        if self.min_ceiling >= self.max_ceiling:
            raise ValueError("minCeiling must be below maxCeiling")
        if self.ceilings and self.domain != "explicit":
            raise ValueError("ceilings needs domain: explicit")
        if any(not 0 <= v <= 1 for v in self.ceilings.values()):
            raise ValueError("ceilings must be in [0, 1]")
        return self

    def build(self) -> PriorityHoldback:
        return PriorityHoldback(
            self.min_ceiling, self.max_ceiling, domain=self.domain, explicit=dict(self.ceilings)
        )


class SoftReflectiveParams(CamelModel):
    def build(self) -> SoftReflective:
        return SoftReflective()


class AdaptiveHoldbackParams(CamelModel):
    """sluiceway's adaptive holdback: ``window`` (Go duration), ``buckets``, ``safety``,
    ``margin`` (requests), ``minCeiling`` / ``maxCeiling``."""

    window: Duration = 30.0
    buckets: int = Field(default=10, ge=1)
    safety: float = Field(default=1.0, ge=0)
    margin: float = Field(default=1.0, ge=0)
    min_ceiling: float = Field(default=0.0, ge=0, lt=1)
    max_ceiling: float = Field(default=1.0, gt=0, le=1)

    @model_validator(mode="after")
    def _consistent(self) -> AdaptiveHoldbackParams:
        if self.window <= 0:
            raise ValueError("window must be > 0")
        if self.min_ceiling >= self.max_ceiling:
            raise ValueError("minCeiling must be below maxCeiling")
        return self

    def build(self) -> AdaptiveHoldback:
        return AdaptiveHoldback(
            self.window,
            self.buckets,
            self.safety,
            self.margin,
            self.min_ceiling,
            self.max_ceiling,
        )


class UtilizationDetectorParams(CamelModel):
    queue_depth_threshold: float = Field(default=5, gt=0)
    kv_cache_util_threshold: float = Field(default=0.8, gt=0, le=1)
    metrics_staleness_threshold: Duration = 0.2
    headroom: float = Field(default=0.0, ge=0)

    def check(self, path: str) -> list[str]:
        if self.headroom > 1.0:
            return [f"{path}.headroom: {self.headroom} is above 1.0"]
        return []

    def build(self) -> UtilizationDetector:
        return UtilizationDetector(
            self.queue_depth_threshold,
            self.kv_cache_util_threshold,
            self.metrics_staleness_threshold,
            self.headroom,
        )


class ConcurrencyDetectorParams(CamelModel):
    max_concurrency: int = Field(default=100, gt=0)
    max_token_concurrency: int = Field(default=1_000_000, gt=0)
    concurrency_mode: Literal["requests", "tokens", "hybrid"] = "requests"
    headroom: float = Field(default=0.0, ge=0)
    in_flight_load_producer_name: str = ""

    def build(self) -> ConcurrencyDetector:
        return ConcurrencyDetector(
            self.max_concurrency,
            self.max_token_concurrency,
            self.concurrency_mode,
            self.headroom,
        )
