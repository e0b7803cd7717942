"""EndpointPickerConfig -> settings, with the multi-tenant guide's router values files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sluiceway.config import load_endpoint_picker_config
from sluiceway.config.flow_plugins import (
    AdaptiveHoldbackParams,
    ConcurrencyDetectorParams,
    PriorityHoldbackParams,
    TokenFairParams,
    UtilizationDetectorParams,
)
from sluiceway.config.registry import IMPLEMENTED, params_model
from sluiceway.config.router_values import RouterValues, embedded_picker_configs
from sluiceway.errors import ConfigError
from sluiceway.flowcontrol import CapacityView, FlowController, Request
from sluiceway.flowcontrol.configure import build_plugin, configure, idle_detector_notes
from sluiceway.flowcontrol.fairness import GlobalStrict, RoundRobin, TokenFair
from sluiceway.flowcontrol.ordering import FCFS
from sluiceway.flowcontrol.saturation import ConcurrencyDetector, UtilizationDetector
from sluiceway.flowcontrol.usage import AdaptiveHoldback, PriorityHoldback, StaticUsageLimit

GUIDE = Path(__file__).parents[2] / "fixtures" / "guide"


def guide(name: str) -> object:
    values = RouterValues.model_validate(yaml.safe_load((GUIDE / name).read_text()))
    (config, _), *_ = embedded_picker_configs(values).values()
    return configure(config)


def test_evictable_values_file() -> None:
    got = guide("router-flow-control-evictable.yaml")
    s = got.settings  # type: ignore[attr-defined]
    assert got.enabled and isinstance(got.detector, ConcurrencyDetector)  # type: ignore[attr-defined]
    assert got.detector.max_concurrency == 10  # type: ignore[attr-defined]
    assert (s.max_bytes, s.max_requests, s.default_ttl) == (10 * 2**30, 1000, 300.0)
    assert [b.priority for b in s.bands] == [100, 60, 30, 10, -5, -10]
    assert all(b.max_requests == 500 and isinstance(b.fairness, RoundRobin) for b in s.bands)
    assert all(isinstance(b.ordering, FCFS) for b in s.bands)
    assert s.eviction.enabled and s.eviction.grace == 0.01
    assert isinstance(s.usage_limit, StaticUsageLimit)


def test_holdback_values_file_gives_the_upstream_ceilings() -> None:
    got = guide("router-flow-control-holdback.yaml")
    s = got.settings  # type: ignore[attr-defined]
    assert isinstance(s.usage_limit, PriorityHoldback) and not s.eviction.enabled
    cycle = FlowController(s).next_dispatches(0.0, CapacityView(0.0))
    assert [round(c, 3) for c in cycle.ceilings] == [1.0, 0.917, 0.833, 0.75, 0.667, 0.583, 0.5]


def doc(**flow_control: object) -> dict[str, object]:
    return {
        "apiVersion": "llm-d.ai/v1",
        "kind": "EndpointPickerConfig",
        "featureGates": ["flowControl"],
        "plugins": [
            {"type": "token-fair-fairness-policy", "name": "vtc", "parameters": {}},
            {"type": "adaptive-holdback-policy", "name": "adapt", "parameters": {"window": "1m"}},
        ],
        "flowControl": flow_control,
    }


def test_defaults_and_own_types() -> None:
    data = doc(
        priorityBands=[{"priority": 5, "fairnessPolicyRef": "vtc"}, {"priority": -1}],
        usageLimitPolicyPluginRef="adapt",
        noEndpointRequestTTL="2m",
    )
    got = configure(load_endpoint_picker_config(data).value)
    s = got.settings
    assert isinstance(s.bands[0].fairness, TokenFair) and isinstance(
        s.bands[1].fairness, GlobalStrict
    )
    assert s.bands[1].max_requests == 5000 and s.bands[1].max_bytes == 10**9
    assert isinstance(s.usage_limit, AdaptiveHoldback) and s.usage_limit.window == 60.0
    assert s.empty_pool_ttl == 120.0 and s.default_ttl == 60.0
    assert isinstance(got.detector, UtilizationDetector)  # auto-registered default
    fc = FlowController(s)
    assert fc.add(Request("a", "t", 5), 0.0) is None


def test_gate_off_without_detector_has_no_signal() -> None:
    data = doc()
    data["featureGates"] = []
    got = configure(load_endpoint_picker_config(data).value)
    assert not got.enabled and got.detector is None


def test_legacy_top_level_detector() -> None:
    data = doc()
    data["saturationDetector"] = {"queueDepthThreshold": 2, "metricsStalenessThreshold": "1s"}
    got = configure(load_endpoint_picker_config(data).value)
    det = got.detector
    assert isinstance(det, UtilizationDetector)
    assert (det.queue_depth_threshold, det.kv_cache_util_threshold, det.staleness) == (2, 0.8, 1.0)
    assert got.settings.eviction.grace == pytest.approx(0.05 + 1.0 + 0.25)


def test_a_detector_left_unnamed_is_said_at_start_up() -> None:
    data = doc()
    data["plugins"] = [{"type": "concurrency-detector", "parameters": {"maxConcurrency": 10}}]
    config = load_endpoint_picker_config(data).value
    assert isinstance(configure(config).detector, UtilizationDetector)
    [note] = idle_detector_notes(config)
    assert "'concurrency-detector'" in note and "default utilization-detector" in note
    named = doc(saturationDetector={"pluginRef": "concurrency-detector"})
    named["plugins"] = data["plugins"]
    assert idle_detector_notes(load_endpoint_picker_config(named).value) == []
    data["featureGates"] = []  # legacy admission without a detector: nothing gates
    assert idle_detector_notes(load_endpoint_picker_config(data).value) == []


def test_known_but_unimplemented_type_is_an_error_naming_the_field() -> None:
    data = doc(priorityBands=[{"priority": 1, "fairnessPolicyRef": "program-aware-fairness"}])
    config = load_endpoint_picker_config(data).value
    with pytest.raises(ConfigError) as err:
        configure(config)
    assert err.value.field == "flowControl.priorityBands[0].fairnessPolicyRef"


def test_bad_plugin_parameters_fail_at_load() -> None:
    data = doc()
    data["plugins"] = [{"type": "concurrency-detector", "parameters": {"maxConcurrency": 0}}]
    with pytest.raises(ConfigError) as err:
        load_endpoint_picker_config(data)
    assert "maxConcurrency" in str(err.value)


def test_every_registered_plugin_type_has_a_builder() -> None:
    flow_plugins = [n for n, target in IMPLEMENTED.items() if ".flow_plugins:" in target]
    assert len(flow_plugins) == 12
    for name in flow_plugins:
        model = params_model(name)
        assert model is not None
        params = model.model_validate({"minCeiling": 0.5} if "priority-holdback" in name else {})
        assert build_plugin(params) is not None, name


def test_builders_carry_the_parameters() -> None:
    holdback = build_plugin(
        PriorityHoldbackParams.model_validate(
            {"minCeiling": 0.1, "domain": "explicit", "ceilings": {"10": 0.8}}
        )
    )
    assert isinstance(holdback, PriorityHoldback) and holdback.explicit == {10: 0.8}
    util = build_plugin(
        UtilizationDetectorParams.model_validate({"metricsStalenessThreshold": "2s"})
    )
    assert isinstance(util, UtilizationDetector)
    assert (util.queue_depth_threshold, util.kv_cache_util_threshold, util.staleness) == (5, 0.8, 2)
    conc = build_plugin(ConcurrencyDetectorParams.model_validate({"concurrencyMode": "hybrid"}))
    assert isinstance(conc, ConcurrencyDetector)
    assert (conc.max_concurrency, conc.max_token_concurrency, conc.mode) == (
        100,
        1_000_000,
        "hybrid",
    )
    fair = build_plugin(TokenFairParams.model_validate({"outputTokenWeight": 3}))
    assert isinstance(fair, TokenFair) and fair.charge_of(10, 10) == 40
    adapt = build_plugin(AdaptiveHoldbackParams.model_validate({"window": "2m", "safety": 2}))
    assert isinstance(adapt, AdaptiveHoldback)
    assert (adapt.window, adapt.safety, adapt.margin) == (120.0, 2.0, 1.0)


def test_a_model_without_a_builder_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="no flow-control builder"):
        build_plugin(object())
