"""Parameter models of the plugin types: upstream keys, defaults and rejections."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sluiceway.flowcontrol.params import (
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
    policy = PriorityHoldbackParams.model_validate(
        {"minCeiling": 0.1, "domain": "explicit", "ceilings": {"10": 0.8}}
    ).build()
    assert policy.explicit == {10: 0.8}


def test_soft_reflective_rejects_any_parameter() -> None:
    with pytest.raises(ValidationError):
        SoftReflectiveParams.model_validate({"threshold": 1})


def test_detector_defaults_and_go_durations() -> None:
    util = UtilizationDetectorParams.model_validate({"metricsStalenessThreshold": "2s"}).build()
    assert (util.queue_depth_threshold, util.kv_cache_util_threshold, util.staleness) == (5, 0.8, 2)
    conc = ConcurrencyDetectorParams.model_validate({"concurrencyMode": "hybrid"}).build()
    assert (conc.max_concurrency, conc.max_token_concurrency, conc.mode) == (
        100,
        1_000_000,
        "hybrid",
    )
    with pytest.raises(ValidationError):
        ConcurrencyDetectorParams.model_validate({"concurrencyMode": "bytes"})


def test_own_types() -> None:
    fair = TokenFairParams.model_validate({"outputTokenWeight": 3}).build()
    assert fair.charge_of(10, 10) == 40
    adapt = AdaptiveHoldbackParams.model_validate({"window": "2m", "safety": 2}).build()
    assert (adapt.window, adapt.safety, adapt.margin) == (120.0, 2.0, 1.0)
    with pytest.raises(ValidationError):
        AdaptiveHoldbackParams.model_validate({"window": "0s"})
