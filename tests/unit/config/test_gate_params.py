"""Gate parameter models validate a queue's or pool's ``gate_params`` without building a gate:
defaults, bounds, the combinators' nested specs, and the rules that span fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sluiceway.config.gate_params import (
    GATE_PARAMS,
    CompositeParams,
    ConstantParams,
    EndpointScrapeParams,
    LeasedRateParams,
    QuotaGateParams,
    WaitOnRefuseParams,
)


def test_defaults_and_bounds() -> None:
    assert ConstantParams().budget == 1.0
    assert ConstantParams.model_validate({"budget": "0.5"}).budget == 0.5  # strings as upstream
    with pytest.raises(ValidationError):
        ConstantParams.model_validate({"budget": 1.5})
    quota = QuotaGateParams.model_validate({"mode": "concurrency", "limit": 2, "window": "2m"})
    assert (quota.gating_mode, quota.missing_attribute, quota.window) == (
        "blocking",
        "overflow",
        120.0,
    )


def test_nested_specs_arrive_as_objects_or_json_strings() -> None:
    spec = '{"gate_type": "constant", "gate_params": "{\\"budget\\": 0.2}"}'
    assert WaitOnRefuseParams.model_validate({"gate": spec}).gate.gate_params == {"budget": 0.2}
    composite = CompositeParams.model_validate({"gates": [{"gate_type": "constant"}]})
    assert composite.gates[0].gate_type == "constant"


def test_rules_across_fields() -> None:
    with pytest.raises(ValidationError, match="max_count_per_pod"):
        EndpointScrapeParams.model_validate({"url": "u", "metric": "m", "admission": "counted"})
    with pytest.raises(ValidationError, match="finite"):
        LeasedRateParams.model_validate(
            {"address": "a", "control_key": "k", "burst_seconds": "inf"}
        )


def test_both_quota_names_share_one_model() -> None:
    assert GATE_PARAMS["redis-quota"] is GATE_PARAMS["sql-quota"] is QuotaGateParams
