"""The router chart's values files: embedded EndpointPickerConfig documents."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sluiceway.config.router_values import RouterValues, embedded_picker_configs
from sluiceway.config.strict import validate_model
from sluiceway.errors import ConfigError

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"
PICKER = "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"


def values(custom: dict[str, object], chosen: str = "") -> RouterValues:
    epp = {"pluginsCustomConfig": custom, "pluginsConfigFile": chosen}
    return RouterValues.model_validate({"router": {"epp": epp}})


def test_the_guides_router_values_embed_one_config_each() -> None:
    for name in ("router-flow-control-evictable.yaml", "router-flow-control-holdback.yaml"):
        loaded = RouterValues.model_validate(yaml.safe_load((GUIDE / name).read_text()))
        configs = embedded_picker_configs(loaded)
        assert len(configs) == 1
        (config, _), *_ = configs.values()
        assert config.flow_control_enabled


def test_embedded_as_text_or_object() -> None:
    as_text = embedded_picker_configs(values({"a.yaml": PICKER}))
    as_object = embedded_picker_configs(values({"a.yaml": yaml.safe_load(PICKER)}))
    assert as_text["a.yaml"][0] == as_object["a.yaml"][0]


def test_two_documents_in_one_entry_are_an_error_naming_it() -> None:
    with pytest.raises(ConfigError) as info:
        embedded_picker_configs(values({"a.yaml": PICKER + "---\n" + PICKER}))
    assert info.value.field == "router.epp.pluginsCustomConfig.a.yaml"


def test_a_chosen_file_not_embedded_is_a_warning() -> None:
    data = {"router": {"epp": {"pluginsConfigFile": "default.yaml"}}}
    loaded = validate_model(RouterValues, data)
    assert loaded.warnings == (
        "router.epp.pluginsConfigFile: 'default.yaml' is not embedded here (a chart built-in?)",
    )
