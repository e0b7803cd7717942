"""Gate configs in queues and pools: the type's own parameters and nested combinators."""

from __future__ import annotations

import pytest

from sluiceway.config.gates import check_gate, gate_types_in
from sluiceway.errors import ConfigError


def test_no_gate_type_means_no_gate() -> None:
    assert check_gate("", None, field="queues[0]") == []
    assert gate_types_in("", None) == set()


def test_params_as_object_or_json_string() -> None:
    assert check_gate("local-max-concurrency", {"limit": "2"}, field="pools[0]") == []
    assert check_gate("local-max-concurrency", '{"limit": 2}', field="pools[0]") == []
    with pytest.raises(ConfigError) as info:
        check_gate("local-max-concurrency", "{not json", field="pools[0]")
    assert info.value.field == "pools[0].gate_params"


def test_an_unknown_inner_type_is_named_by_its_path() -> None:
    params = {"gates": [{"gate_type": "constant"}, {"gate_type": "no-such-gate"}]}
    with pytest.raises(ConfigError) as info:
        check_gate("composite", params, field="pools[1]")
    assert info.value.field == "pools[1].gate_params.gates[1].gate_type"
    inner = {"gate": '{"gate_type": "constant", "colour": 1}'}
    with pytest.raises(ConfigError) as extra:
        check_gate("wait-on-refuse", inner, field="q")
    assert extra.value.field == "q.gate_params.gate.colour"


def test_nested_types_are_collected() -> None:
    wrapped = {"gate": {"gate_type": "composite", "gate_params": {"gates": [
        {"gate_type": "constant"}, {"gate_type": "redis-quota"}]}}}  # fmt: skip
    assert gate_types_in("wait-on-refuse", wrapped) == {
        "wait-on-refuse",
        "composite",
        "constant",
        "redis-quota",
    }
    tier = {"saturation_gate": "prometheus-saturation", "saturation_gate_params": {}}
    assert gate_types_in("tier-priority-admission", tier) == {
        "tier-priority-admission",
        "prometheus-saturation",
    }
    assert gate_types_in("composite", "{broken") == {"composite"}  # best effort
