"""Gate types build by name from upstream-shaped parameters; unknown names are errors."""

from __future__ import annotations

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.errors import ConfigError
from sluiceway.gates.composite import CompositeGate
from sluiceway.gates.factory import GateContext, build_gate
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


def test_every_known_gate_type_is_built() -> None:
    from sluiceway.config.registry import GATE_TYPES
    from sluiceway.gates.factory import gate_params_model

    missing = {name for name in GATE_TYPES if gate_params_model(name) is None}
    assert missing == set()


def test_only_known_names_can_register() -> None:
    from sluiceway.gates.factory import register_gate

    with pytest.raises(ValueError, match="GATE_TYPES"):
        register_gate("made-up", type(None))  # type: ignore[arg-type]
