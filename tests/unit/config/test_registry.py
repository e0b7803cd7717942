"""The registry of gate and plugin names: unknown = error, known-unimplemented = warning."""

from __future__ import annotations

import pytest

from sluiceway.config import registry
from sluiceway.config.params import FlexInt
from sluiceway.config.strict import StrictModel
from sluiceway.errors import ConfigError


class FakeParams(StrictModel):
    limit: FlexInt


@pytest.fixture
def implemented(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.IMPLEMENTED, "queue-scorer", f"{__name__}:FakeParams")


def test_contract_names_are_registered() -> None:
    assert {"redis-quota", "tier-priority-admission", "wait-on-refuse"} <= registry.GATE_TYPES
    assert registry.PLUGIN_TYPES["priority-holdback-policy"] == "usage-limit"
    assert set(registry.PLUGIN_TYPES.values()) == set(registry.PLUGIN_CATEGORIES)


def test_unknown_names_are_errors() -> None:
    with pytest.raises(ConfigError) as info:
        registry.validate_params("gate", "magic", {}, field="pools[0].gate_params")
    assert info.value.field == "pools[0].gate_params"
    with pytest.raises(ConfigError, match="unknown plugin type"):
        registry.validate_params("plugin", "redis-quota", {}, field="plugins[0]")


def test_known_but_unimplemented_is_a_warning() -> None:
    params, warnings = registry.validate_params(
        "plugin", "program-aware-fairness", {}, field="g", type_field="g.type"
    )
    assert params is None
    assert warnings == [
        "g.type: plugin type 'program-aware-fairness' is known but not implemented yet"
    ]
    with pytest.raises(ConfigError, match="not implemented"):
        registry.require_implemented("program-aware-fairness", field="g.type")


def test_gate_params_come_from_configuration_without_importing_a_gate() -> None:
    from sluiceway.config.gate_params import ConstantParams

    assert registry.params_model("constant") is ConstantParams
    registry.require_implemented("constant", field="x")
    assert {
        "constant",
        "local-max-concurrency",
        "redis-quota",
        "sql-quota",
        "prometheus-query",
        "prometheus-saturation",
        "prometheus-budget",
        "endpoint-scrape",
        "redis",
        "redis-leased-rate",
        "composite",
        "wait-on-refuse",
        "tier-priority-admission",
        "aimd",
    } == registry.GATE_TYPES


@pytest.mark.usefixtures("implemented")
def test_implemented_params_are_validated() -> None:
    params, warnings = registry.validate_params(
        "plugin", "queue-scorer", {"limit": "3"}, field="plugins[0].parameters"
    )
    assert isinstance(params, FakeParams) and params.limit == 3 and warnings == []
    registry.require_implemented("queue-scorer", field="x")
    with pytest.raises(ConfigError) as info:
        registry.validate_params(
            "plugin", "queue-scorer", {"limit": "x"}, field="plugins[0].parameters"
        )
    assert info.value.field == "plugins[0].parameters.limit"
    assert registry.params_model("queue-scorer") is FakeParams


def test_require_implemented_rejects_unknown() -> None:
    with pytest.raises(ConfigError, match="unknown"):
        registry.require_implemented("magic", field="x")
