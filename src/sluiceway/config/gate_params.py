"""The parameter models of every gate type, and the one table of gate type names.

A gate's parameters are part of a configuration document (a queue's or pool's ``gate_params``),
so their models live here beside the documents, as the flow-control plugins' do
(``flow_plugins.py``): ``check-config`` validates them without building a gate, and
configuration never imports a component. :data:`GATE_PARAMS` maps each type name, upstream's
and sluiceway's own, to its model; ``sluiceway.gates.factory.BUILDERS`` maps the same names to
the functions that build the gates, and a test keeps the two tables the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Final, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sluiceway.config.params import Duration, FlexFloat, FlexInt, JsonObject, decode_json_object
from sluiceway.config.strict import StrictModel

__all__ = [
    "GATE_PARAMS",
    "AimdParams",
    "BudgetKeyParams",
    "CompositeParams",
    "ConstantParams",
    "EndpointScrapeParams",
    "GateSpec",
    "GatingMode",
    "LeasedRateParams",
    "LocalMaxConcurrencyParams",
    "MissingAttribute",
    "Mode",
    "PrometheusBudgetParams",
    "PrometheusQueryParams",
    "PrometheusSaturationParams",
    "QuotaGateParams",
    "TierPriorityParams",
    "WaitOnRefuseParams",
]

Mode = Literal["concurrency", "rate-limit"]
GatingMode = Literal["classifying", "blocking"]
MissingAttribute = Literal["overflow", "reserved", "refuse"]


class ConstantParams(StrictModel):
    """``budget`` in [0, 1] (default 1: open)."""

    budget: FlexFloat = Field(default=1.0, ge=0.0, le=1.0)


class LocalMaxConcurrencyParams(StrictModel):
    limit: FlexInt = Field(gt=0)
    gating_mode: Literal["classifying", "blocking"] = "classifying"


class QuotaGateParams(StrictModel):
    """``redis-quota`` parameters as upstream, plus our ``missing_attribute``."""

    address: str = ""
    attribute: str = Field(default="userid", min_length=1)
    mode: Mode
    limit: FlexInt = Field(gt=0)
    window: Duration = Field(default=60.0, gt=0)
    prefix: str = "quota:"
    gating_mode: GatingMode = "blocking"
    missing_attribute: MissingAttribute = "overflow"


class PrometheusQueryParams(StrictModel):
    query: str = Field(min_length=1)
    fallback: FlexFloat = Field(default=0.0, ge=0.0, le=1.0)
    pool: str = ""


class PrometheusSaturationParams(StrictModel):
    pool: str = Field(min_length=1)
    namespace: str = ""
    threshold: FlexFloat = Field(default=0.8, ge=0.0, le=1.0)
    fallback: FlexFloat | None = Field(default=None, ge=0.0, le=1.0)


class PrometheusBudgetParams(StrictModel):
    pool: str = Field(min_length=1)
    namespace: str = ""
    max_concurrency: FlexInt = Field(default=100, gt=0)
    baseline: FlexFloat = Field(default=0.05, ge=0.0, lt=1.0)
    fallback: FlexFloat = Field(default=0.0, ge=0.0, le=1.0)


class EndpointScrapeParams(StrictModel):
    url: str = Field(min_length=1)
    metric: str = Field(min_length=1)
    labels: JsonObject = Field(default_factory=dict)
    max_count_per_pod: FlexInt = Field(default=0, ge=0)
    baseline: FlexFloat = Field(default=0.0, ge=0.0, lt=1.0)
    fallback: FlexFloat = Field(default=0.0, ge=0.0, le=1.0)
    pods_url: str = ""
    pods_metric: str = ""
    pods_labels: JsonObject = Field(default_factory=dict)
    value_type: Literal["saturation", "budget"] = "saturation"
    absent_value: FlexFloat | None = None
    admission: Literal["budget", "counted"] = "budget"

    @model_validator(mode="after")
    def _counted_rules(self) -> Self:
        if self.admission == "counted":
            if self.max_count_per_pod <= 0:
                raise ValueError("admission 'counted' needs max_count_per_pod > 0")
            if self.baseline or self.fallback:
                raise ValueError("admission 'counted' takes no baseline or fallback")
        return self


class BudgetKeyParams(StrictModel):
    address: str = Field(min_length=1)
    budget_key: str = Field(default="dispatch-gate-budget", min_length=1)
    fallback: FlexFloat = Field(default=0.0, ge=0.0, le=1.0)


class LeasedRateParams(StrictModel):
    address: str = Field(min_length=1)
    control_key: str = Field(min_length=1)
    state_key: str = ""
    pool_id: str = ""
    burst_seconds: FlexFloat = Field(default=1.0, gt=0.0)

    @field_validator("burst_seconds")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be finite")
        return value


class AimdParams(StrictModel):
    """``aimd``: upstream's planned parameters (window bounds, steps, hold, queue-duration
    target) plus sluiceway's ``saturation_target``. ``pool`` keys the shared window (default:
    the owning pool) and names the inference pool a signal is read for; ``max_window`` 0 means
    the pool's worker count. At most one target; a target needs ``pool``."""

    pool: str = ""
    namespace: str = ""
    min_window: FlexInt = Field(default=1, gt=0)
    max_window: FlexInt = Field(default=0, ge=0)
    increase: FlexFloat = Field(default=1.0, gt=0.0)
    decrease: FlexFloat = Field(default=0.5, gt=0.0, lt=1.0)
    hold_duration: Duration = Field(default=30.0, ge=0.0)
    queue_duration_target: Duration | None = Field(default=None, gt=0.0)
    saturation_target: FlexFloat | None = Field(default=None, gt=0.0, le=1.0)

    @field_validator("increase", "hold_duration")
    @classmethod
    def _finite_step(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be finite")
        return value

    @field_validator("max_window")
    @classmethod
    def _not_below_min(cls, value: int, info: ValidationInfo) -> int:
        if value and value < info.data.get("min_window", 1):
            raise ValueError("must be at least min_window (or 0: the pool's workers)")
        return value

    @field_validator("queue_duration_target", "saturation_target")
    @classmethod
    def _target_rules(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is None:
            return value
        if not info.data.get("pool"):
            raise ValueError("a target needs pool (the inference pool its signal is read for)")
        if info.field_name == "saturation_target" and info.data.get("queue_duration_target"):
            raise ValueError("set one of queue_duration_target and saturation_target")
        return value


class GateSpec(StrictModel):
    """A nested gate config: ``{"gate_type": ..., "gate_params": {...}}``."""

    gate_type: str = Field(min_length=1)
    gate_params: JsonObject = Field(default_factory=dict)


class CompositeParams(StrictModel):
    gates: Annotated[list[GateSpec], BeforeValidator(decode_json_object)]


class WaitOnRefuseParams(StrictModel):
    gate: Annotated[GateSpec, BeforeValidator(decode_json_object)]


class TierPriorityParams(StrictModel):
    saturation_gate: str = Field(min_length=1)
    saturation_gate_params: JsonObject = Field(default_factory=dict)
    tier_label: str = Field(default="tier", min_length=1)


GATE_PARAMS: Final[Mapping[str, type[BaseModel]]] = {
    "constant": ConstantParams,
    "local-max-concurrency": LocalMaxConcurrencyParams,
    "redis-quota": QuotaGateParams,
    # newer upstream type; needs --transport postgres (its store is the broker's database)
    "sql-quota": QuotaGateParams,
    "prometheus-query": PrometheusQueryParams,
    "prometheus-saturation": PrometheusSaturationParams,
    "prometheus-budget": PrometheusBudgetParams,
    "endpoint-scrape": EndpointScrapeParams,
    "redis": BudgetKeyParams,
    "redis-leased-rate": LeasedRateParams,
    "composite": CompositeParams,
    "wait-on-refuse": WaitOnRefuseParams,
    "tier-priority-admission": TierPriorityParams,
    "aimd": AimdParams,  # sluiceway's, after upstream's planned feedback gate
}
