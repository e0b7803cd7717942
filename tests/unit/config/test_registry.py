"""The registry of gate and plugin names: unknown = error, known-unimplemented = warning."""

from __future__ import annotations

import pytest

from sluiceway.config import registry
from sluiceway.config.base import StrictModel
from sluiceway.config.params import FlexInt
from sluiceway.errors import ConfigError


class FakeParams(StrictModel):
    limit: FlexInt


@pytest.fixture
def implemented(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.IMPLEMENTED, "local-max-concurrency", f"{__name__}:FakeParams")


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


def test_known_but_unimplemented_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(registry.IMPLEMENTED, "prometheus-budget", raising=False)
    params, warnings = registry.validate_params(
        "gate", "prometheus-budget", {"pool": "p"}, field="g", type_field="g.type"
    )
    assert params is None
    assert warnings == ["g.type: gate type 'prometheus-budget' is known but not implemented yet"]
    with pytest.raises(ConfigError, match="not implemented"):
        registry.require_implemented("prometheus-budget", field="g.type")


@pytest.mark.usefixtures("implemented")
def test_implemented_params_are_validated() -> None:
    params, warnings = registry.validate_params(
        "gate", "local-max-concurrency", {"limit": "3"}, field="pools[0].gate_params"
    )
    assert isinstance(params, FakeParams) and params.limit == 3 and warnings == []
    registry.require_implemented("local-max-concurrency", field="x")
    with pytest.raises(ConfigError) as info:
        registry.validate_params(
            "gate", "local-max-concurrency", {"limit": "x"}, field="pools[0].gate_params"
        )
    assert info.value.field == "pools[0].gate_params.limit"
    assert registry.params_model("local-max-concurrency") is FakeParams


def test_require_implemented_rejects_unknown() -> None:
    with pytest.raises(ConfigError, match="unknown"):
        registry.require_implemented("magic", field="x")
