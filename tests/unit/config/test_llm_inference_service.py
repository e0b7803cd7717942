"""KServe's LLMInferenceService: the EndpointPickerConfig under spec.router.scheduler, inline,
as the scheduler container's --config-text, or only referenced (a ConfigMap, a file)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from sluiceway.config.kinds import check_file
from sluiceway.config.llm_inference_service import load_llm_inference_service
from sluiceway.errors import ConfigError

KSERVE = Path(__file__).resolve().parents[2] / "fixtures" / "kserve"
INLINE = yaml.safe_load((KSERVE / "llminferenceservice-inline.yaml").read_text())
CONFIG_TEXT = yaml.safe_load((KSERVE / "llminferenceservice-config-text.yaml").read_text())
PICKER = "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"


def service(scheduler: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceService",
        "metadata": {"name": "m"},
        "spec": {"model": {"uri": "hf://m"}, "router": {"scheduler": scheduler}, **spec},
    }


def args(*values: str) -> dict[str, Any]:
    return {"template": {"containers": [{"name": "main", "args": list(values)}]}}


def test_inline_config() -> None:
    loaded = load_llm_inference_service(INLINE)
    found = loaded.value
    assert found.config is not None and found.config.flow_control_enabled
    assert found.field == "spec.router.scheduler.config.inline"
    assert found.reference is None


def test_config_text_in_the_scheduler_containers_args() -> None:
    found = load_llm_inference_service(CONFIG_TEXT).value
    assert found.config is not None and not found.config.flow_control_enabled
    assert found.field == "spec.router.scheduler.template.containers[0].args[5]"
    joined = load_llm_inference_service(service(args("--v=2", f"--config-text={PICKER}"))).value
    assert joined.config is not None and joined.config.flow_control_enabled
    assert joined.field == "spec.router.scheduler.template.containers[0].args[1]"
    as_text = load_llm_inference_service(service({"config": {"inline": PICKER}})).value
    assert as_text.config == joined.config


def test_a_referenced_config_is_valid_but_not_checked() -> None:
    ref = service({"config": {"ref": {"name": "epp", "key": "config.yaml"}}})
    loaded = load_llm_inference_service(ref)
    assert loaded.value.config is None
    assert loaded.value.reference == "ConfigMap 'epp' key 'config.yaml'"
    assert loaded.warnings == (
        "spec.router.scheduler.config.ref: the EndpointPickerConfig is in ConfigMap 'epp' key "
        "'config.yaml', which a file cannot reach; not checked",
    )
    in_file = load_llm_inference_service(service(args("--config-file", "/etc/epp.yaml"))).value
    assert in_file.reference == "the file /etc/epp.yaml of the scheduler's container"


def test_no_config_is_kserves_default_and_base_refs_are_named() -> None:
    loaded = load_llm_inference_service(service({}, baseRefs=[{"name": "preset"}]))
    assert loaded.value.config is None and loaded.value.reference is None
    assert loaded.warnings == (
        "spec.router.scheduler: no EndpointPickerConfig here: KServe's default configuration "
        "applies",
        "spec.baseRefs: a configuration in a base LLMInferenceServiceConfig is not followed "
        "(check that document itself)",
    )
    bare = {k: v for k, v in service({}).items() if k != "spec"}
    assert load_llm_inference_service(bare).value.config is None


@pytest.mark.parametrize(
    ("scheduler", "field"),
    [
        ({"config": {"inline": {"apiVersion": "llm-d.ai/v1", "kind": "EndpointPickerConfig",
                                "featureGates": 3}}},
         "spec.router.scheduler.config.inline.featureGates"),
        ({"config": {"inline": PICKER + "---\n" + PICKER}}, "spec.router.scheduler.config.inline"),
        ({"config": {"inline": {"kind": "x"}, "colour": "red"}},
         "spec.router.scheduler.config.colour"),
        ({"config": {"inline": PICKER}, **args("--config-text", PICKER)},
         "spec.router.scheduler.template.containers[0].args[1]"),
        (args("--config-text"), "spec.router.scheduler.template.containers[0].args[0]"),
        ({"template": {"containers": [{"args": [3]}]}},
         "spec.router.scheduler.template.containers[0].args[0]"),
        ({"config": {"ref": {"name": "epp"}}}, "spec.router.scheduler.config.ref.key"),
    ],
)  # fmt: skip
def test_errors_name_the_field(scheduler: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_llm_inference_service(service(scheduler))
    assert info.value.field == field


def test_a_foreign_api_version_is_an_error() -> None:
    doc = copy.deepcopy(INLINE)
    doc["apiVersion"] = "example.com/v1"
    with pytest.raises(ConfigError) as info:
        load_llm_inference_service(doc)
    assert info.value.field == "apiVersion"


def test_check_config_recognises_both_kinds(tmp_path: Path) -> None:
    for name in ("llminferenceservice-inline.yaml", "llminferenceservice-config-text.yaml"):
        assert check_file(KSERVE / name).kind == "llm-inference-service"
    preset = tmp_path / "preset.yaml"
    doc = service({"config": {"inline": PICKER}})
    preset.write_text(yaml.safe_dump({**doc, "kind": "LLMInferenceServiceConfig"}))
    assert check_file(preset).kind == "llm-inference-service"
