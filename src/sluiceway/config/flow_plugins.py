"""Parameter models of the router's flow-control plugin types (registered in ``registry.py``).

Each model validates one plugin's ``parameters`` block (camelCase keys as upstream, unknown keys
rejected). The models only describe configuration: ``sluiceway.flowcontrol.configure`` builds the
policy or detector each one configures, so the flow-control engine never imports pydantic.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sluiceway.config.params import Duration
from sluiceway.config.strict import CamelModel

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
    """``global-strict-fairness-policy``: no parameters."""


class RoundRobinParams(CamelModel):
    """``round-robin-fairness-policy``: no parameters."""


class TokenFairParams(CamelModel):
    """Weights of prompt and output tokens in a request's charge (VTC defaults 1 and 2)."""

    input_token_weight: float = Field(default=1.0, ge=0)
    output_token_weight: float = Field(default=2.0, ge=0)


class FCFSParams(CamelModel):
    """``fcfs-ordering-policy``: no parameters."""


class EDFParams(CamelModel):
    """``edf-ordering-policy``: no parameters."""


class SLODeadlineParams(CamelModel):
    """``slo-deadline-ordering-policy``: no parameters (the SLO comes in headers)."""


class StaticUsageLimitParams(CamelModel):
    """``static-usage-limit-policy``: one ceiling for every band."""

    threshold: float = Field(default=1.0, ge=0)


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


class SoftReflectiveParams(CamelModel):
    """``soft-reflective-ceiling-policy``: no parameters."""


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


class UtilizationDetectorParams(CamelModel):
    """``utilization-detector``: thresholds on scraped queue depth and KV-cache use."""

    queue_depth_threshold: float = Field(default=5, gt=0)
    kv_cache_util_threshold: float = Field(default=0.8, gt=0, le=1)
    metrics_staleness_threshold: Duration = 0.2
    headroom: float = Field(default=0.0, ge=0)

    def check(self, path: str) -> list[str]:
        if self.headroom > 1.0:
            return [f"{path}.headroom: {self.headroom} is above 1.0"]
        return []


class ConcurrencyDetectorParams(CamelModel):
    """``concurrency-detector``: limits on in-flight requests and/or tokens."""

    max_concurrency: int = Field(default=100, gt=0)
    max_token_concurrency: int = Field(default=1_000_000, gt=0)
    concurrency_mode: Literal["requests", "tokens", "hybrid"] = "requests"
    headroom: float = Field(default=0.0, ge=0)
    in_flight_load_producer_name: str = ""
