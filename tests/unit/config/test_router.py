"""EndpointPickerConfig: feature gates, quantities, plugin references, legacy detector."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from sluiceway.config import load_endpoint_picker_config
from sluiceway.errors import ConfigError

BASE = """
apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: round-robin-fairness-policy
- type: priority-holdback-policy
  name: holdback
  parameters: {minCeiling: 0.5}
- type: concurrency-detector
flowControl:
  maxBytes: "10Gi"
  maxRequests: "1k"
  defaultRequestTTL: "300s"
  usageLimitPolicyPluginRef: holdback
  saturationDetector: {pluginRef: concurrency-detector}
  priorityBands:
  - {priority: 100, maxRequests: "500", fairnessPolicyRef: round-robin-fairness-policy}
  - {priority: -10, orderingPolicyRef: edf-ordering-policy}
"""


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(BASE)
    doc.update(changes)
    return doc


def test_loads_with_quantities_and_durations() -> None:
    config = load_endpoint_picker_config(_doc()).value
    fc = config.flow_control
    assert fc is not None and config.flow_control_enabled
    assert (fc.max_bytes, fc.max_requests, fc.default_request_ttl) == (10 * 2**30, 1000, 300.0)
    assert fc.priority_bands[0].max_requests == 500
    assert fc.priority_bands[1].max_requests is None
    assert config.plugin("holdback") is not None
    assert config.plugin("edf-ordering-policy") is not None  # implicit default instance


@pytest.mark.parametrize(
    ("gates", "enabled"),
    [
        (["flowControl"], True),
        (["flowControl=true"], True),
        (["flowControl=false"], False),
        ([], False),
    ],
)
def test_feature_gate_forms(gates: list[str], enabled: bool) -> None:
    assert (
        load_endpoint_picker_config(_doc(featureGates=gates)).value.flow_control_enabled is enabled
    )


def test_flow_control_ignored_when_gate_off_is_a_warning() -> None:
    loaded = load_endpoint_picker_config(_doc(featureGates=["flowControl=false", "other"]))
    assert any("flowControl: ignored" in w for w in loaded.warnings)
    assert any("'other'" in w for w in loaded.warnings)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"apiVersion": "v2"}, "apiVersion"),
        ({"kind": "Config"}, "kind"),
        ({"featureGates": ["flowControl=maybe"]}, "featureGates"),
        ({"plugins": [{"type": "x-scorer"}]}, "plugins[0].type"),
        ({"plugins": [{"type": "queue-scorer"}, {"type": "queue-scorer"}]}, "plugins[1]"),
        ({"colour": 1}, "colour"),
    ],
)
def test_errors_name_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_endpoint_picker_config(_doc(**changes))
    assert info.value.field == field


def test_reference_to_wrong_category() -> None:
    doc = _doc()
    doc["flowControl"]["usageLimitPolicyPluginRef"] = "concurrency-detector"
    with pytest.raises(ConfigError) as info:
        load_endpoint_picker_config(doc)
    assert info.value.field == "flowControl.usageLimitPolicyPluginRef"


def test_reference_to_missing_plugin_and_duplicate_band() -> None:
    doc = _doc()
    doc["flowControl"]["saturationDetector"] = {"pluginRef": "nope"}
    with pytest.raises(ConfigError, match="no plugin named 'nope'"):
        load_endpoint_picker_config(doc)
    doc = _doc()
    doc["flowControl"]["priorityBands"].append({"priority": 100})
    with pytest.raises(ConfigError, match="duplicate band priority"):
        load_endpoint_picker_config(doc)


def test_legacy_top_level_saturation_detector() -> None:
    doc = _doc(
        saturationDetector={
            "queueDepthThreshold": 5,
            "kvCacheUtilThreshold": 0.8,
            "metricsStalenessThreshold": "200ms",
        }
    )
    legacy = load_endpoint_picker_config(doc).value.saturation_detector
    assert legacy is not None and legacy.metrics_staleness_threshold == pytest.approx(0.2)


def test_legacy_api_version_warns() -> None:
    loaded = load_endpoint_picker_config(_doc(apiVersion="inference.networking.x-k8s.io/v1alpha1"))
    assert any("deprecated" in w for w in loaded.warnings)
