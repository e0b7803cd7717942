"""Parameter models of the flow-control plugin types: upstream keys, defaults and rejections."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sluiceway.config.flow_plugins import (
    AdaptiveHoldbackParams,
    ConcurrencyDetectorParams,
    PriorityHoldbackParams,
    SoftReflectiveParams,
    TokenFairParams,
    UtilizationDetectorParams,
)


def test_holdback_requires_min_ceiling_and_explicit_for_a_map() -> None:
    with pytest.raises(ValidationError, match="minCeiling"):
        PriorityHoldbackParams.model_validate({})
    with pytest.raises(ValidationError, match="explicit"):
        PriorityHoldbackParams.model_validate({"minCeiling": 0.5, "ceilings": {"10": 0.8}})
    with pytest.raises(ValidationError, match="below maxCeiling"):
        PriorityHoldbackParams.model_validate({"minCeiling": 0.9, "maxCeiling": 0.5})
    params = PriorityHoldbackParams.model_validate(
        {"minCeiling": 0.1, "domain": "explicit", "ceilings": {"10": 0.8}}
    )
    assert params.ceilings == {10: 0.8}


def test_soft_reflective_rejects_any_parameter() -> None:
    with pytest.raises(ValidationError):
        SoftReflectiveParams.model_validate({"threshold": 1})


def test_detector_defaults_and_go_durations() -> None:
    util = UtilizationDetectorParams.model_validate({"metricsStalenessThreshold": "2s"})
    assert (util.queue_depth_threshold, util.kv_cache_util_threshold) == (5, 0.8)
    assert util.metrics_staleness_threshold == 2.0
    conc = ConcurrencyDetectorParams.model_validate({"concurrencyMode": "hybrid"})
    assert (conc.max_concurrency, conc.max_token_concurrency, conc.concurrency_mode) == (
        100,
        1_000_000,
        "hybrid",
    )
    with pytest.raises(ValidationError):
        ConcurrencyDetectorParams.model_validate({"concurrencyMode": "bytes"})


def test_headroom_above_one_is_a_warning_naming_the_field() -> None:
    util = UtilizationDetectorParams.model_validate({"headroom": 1.5})
    assert util.check("plugins[0].parameters") == [
        "plugins[0].parameters.headroom: 1.5 is above 1.0"
    ]


def test_own_types() -> None:
    fair = TokenFairParams.model_validate({"outputTokenWeight": 3})
    assert (fair.input_token_weight, fair.output_token_weight) == (1.0, 3.0)
    adapt = AdaptiveHoldbackParams.model_validate({"window": "2m", "safety": 2})
    assert (adapt.window, adapt.safety, adapt.margin) == (120.0, 2.0, 1.0)
    with pytest.raises(ValidationError):
        AdaptiveHoldbackParams.model_validate({"window": "0s"})
