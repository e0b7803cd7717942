from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.errors import ConfigError
from sluiceway.router.build import build_router, load_picker_config
from sluiceway.router.settings import RouterSettings

GUIDE = Path(__file__).parents[2] / "fixtures" / "guide"


@pytest.mark.parametrize(
    "name",
    [
        "router-flow-control-evictable.yaml",
        "router-flow-control-holdback.yaml",
        "router-flow-control-legacy.yaml",
    ],
)
async def test_guide_router_values_load_and_build(name: str) -> None:
    config, _ = load_picker_config(GUIDE / name)
    assert config.flow_control_enabled
    settings = RouterSettings(endpoints=("http://127.0.0.1:1",))
    app, notes = build_router(config, settings, VirtualClock())
    gateway = app.gateway
    assert gateway.controller is not None
    assert any("trustedSources" in n for n in notes)
    assert gateway.flow.settings.eviction.enabled == ("holdback" not in name)


def test_an_llm_inference_service_gives_its_scheduler_config(tmp_path: Path) -> None:
    kserve = GUIDE.parent / "kserve"
    inline, _ = load_picker_config(kserve / "llminferenceservice-inline.yaml")
    assert inline.flow_control_enabled
    text, _ = load_picker_config(kserve / "llminferenceservice-config-text.yaml")
    assert not text.flow_control_enabled and text.scheduling_profiles
    referenced = tmp_path / "ref.yaml"
    referenced.write_text(
        "apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\nspec:\n  router:\n"
        "    scheduler: {config: {ref: {name: epp, key: epp.yaml}}}\n"
    )
    with pytest.raises(ConfigError, match="give that document as --config") as info:
        load_picker_config(referenced)
    assert info.value.field == f"{referenced}.spec.router.scheduler.config.ref"
    default = tmp_path / "default.yaml"
    default.write_text("apiVersion: serving.kserve.io/v1alpha2\nkind: LLMInferenceService\n")
    config, notes = load_picker_config(default)
    assert not config.flow_control_enabled
    assert notes[-1] == "the router runs with flow control off and no saturation detector"


def test_no_config_means_flow_control_off() -> None:
    config, warnings = load_picker_config(None)
    assert not config.flow_control_enabled and warnings == []


def test_bad_config_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "epp.yaml"
    bad.write_text("apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: 3\n")
    with pytest.raises(ConfigError, match="featureGates"):
        load_picker_config(bad)


def test_settings_validation() -> None:
    """(The endpoint flags are read in test_discovery.py.)"""
    with pytest.raises(ConfigError, match="--endpoints"):
        RouterSettings(endpoints=("localhost:8000",))
    with pytest.raises(ConfigError, match="--health-interval"):
        RouterSettings(health_interval=0)
