"""Gate types build by name from upstream-shaped parameters; unknown names are errors."""

from __future__ import annotations

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.errors import ConfigError
from sluiceway.gates.composite import CompositeGate
from sluiceway.gates.context import GateContext
from sluiceway.gates.factory import build_gate
from sluiceway.gates.local_concurrency import LocalConcurrencyGate
from sluiceway.gates.quota import QuotaGate
from sluiceway.gates.wait_on_refuse import WaitOnRefuseGate


def ctx() -> GateContext:
    return GateContext(clock=VirtualClock(), workers=4)


def test_no_type_means_no_gate() -> None:
    assert build_gate("", {}, ctx()) is None


def test_guide_quota_params_with_strings() -> None:
    params = {
        "address": "redis:6379",
        "attribute": "team",
        "mode": "concurrency",
        "limit": "2",
        "gating_mode": "classifying",
    }
    gate = build_gate("redis-quota", params, ctx())
    assert isinstance(gate, QuotaGate)
    assert (gate.rule.limit, gate.rule.gating_mode, gate.rule.window) == (2, "classifying", 60.0)


def test_quota_window_and_missing_attribute() -> None:
    params = '{"mode": "rate-limit", "limit": 5, "window": "10s", "missing_attribute": "refuse"}'
    gate = build_gate("redis-quota", params, ctx())
    assert isinstance(gate, QuotaGate) and gate.rule.window == 10.0
    assert gate.rule.missing_attribute == "refuse"


def test_nested_configs_as_objects_or_json_strings() -> None:
    inner = '{"gate_type": "local-max-concurrency", "gate_params": {"limit": "2"}}'
    gate = build_gate("wait-on-refuse", {"gate": inner}, ctx())
    assert isinstance(gate, WaitOnRefuseGate)
    composite = build_gate(
        "composite",
        {
            "gates": [
                {"gate_type": "constant"},
                {"gate_type": "local-max-concurrency", "gate_params": '{"limit": 1}'},
            ]
        },
        ctx(),
    )
    assert isinstance(composite, CompositeGate)


def test_local_concurrency_mode() -> None:
    gate = build_gate("local-max-concurrency", {"limit": 3, "gating_mode": "blocking"}, ctx())
    assert isinstance(gate, LocalConcurrencyGate)


@pytest.mark.parametrize(
    ("gate_type", "params", "field"),
    [
        ("no-such-gate", {}, "gate_params"),
        ("redis-quota", {"mode": "sometimes", "limit": 1}, "gate_params.mode"),
        ("redis-quota", {"mode": "concurrency", "limit": 0}, "gate_params.limit"),
        ("local-max-concurrency", {"limit": 1, "extra": 1}, "gate_params.extra"),
    ],
)
def test_bad_configs_name_the_field(gate_type: str, params: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_gate(gate_type, params, ctx())
    assert info.value.field == field


def test_nested_unknown_type_is_an_error() -> None:
    with pytest.raises(ConfigError):
        build_gate("wait-on-refuse", {"gate": {"gate_type": "nope"}}, ctx())


def test_every_gate_type_of_the_configuration_has_a_builder_and_no_other() -> None:
    """One list of names: configuration's parameter models and the builders name the same
    gate types."""
    from sluiceway.config.gate_params import GATE_PARAMS
    from sluiceway.gates.factory import BUILDERS

    assert set(BUILDERS) == set(GATE_PARAMS)
    assert all(callable(b) for b in BUILDERS.values())


def test_a_nested_gate_is_built_through_the_registry() -> None:
    """Combinators build what they nest through ``ctx.build`` (no import of the registry)."""
    gate = build_gate(
        "composite", {"gates": [{"gate_type": "constant", "gate_params": {"budget": 0.25}}]}, ctx()
    )
    assert gate is not None


def test_a_context_used_outside_the_registry_cannot_build_nested_gates() -> None:
    with pytest.raises(ConfigError, match=r"sluiceway\.gates\.factory"):
        ctx().build("constant", {}, ctx(), field="g")
