"""Gate configurations as they appear in queues, pools and nested combinators.

``gate_type`` + ``gate_params`` (an object or a JSON string). Besides the type's own parameter
model (registry), the structure of the combinators is walked here so that an unknown inner type
is caught even before the combinator itself is implemented: ``composite.gates[]``,
``wait-on-refuse.gate`` and ``tier-priority-admission.saturation_gate(_params)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sluiceway.config.registry import validate_params
from sluiceway.config.strict import join_path
from sluiceway.errors import ConfigError

__all__ = ["check_gate", "gate_types_in"]


def _as_object(value: Any, field: str) -> Any:
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"not valid JSON: {exc}", field=field) from None
    return value


def _as_params(value: Any, field: str) -> dict[str, Any]:
    value = _as_object(value, field)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError("must be an object (or a JSON string holding one)", field=field)
    return dict(value)


_Inner = tuple[str, Any, str, str, str]  # type, raw params, field, type key, params key


def _inner_gates(gate_type: str, params: Mapping[str, Any], field: str) -> list[_Inner]:
    """Each nested gate config of a combinator, with where its keys live."""
    if gate_type == "composite":
        gates = _as_object(params.get("gates"), join_path(field, "gates")) or []
        if not isinstance(gates, list):
            raise ConfigError("must be a list of gate configs", field=join_path(field, "gates"))
        return [_spec_parts(spec, join_path(field, "gates", i)) for i, spec in enumerate(gates)]
    if gate_type == "wait-on-refuse" and params.get("gate") is not None:
        return [_spec_parts(params["gate"], join_path(field, "gate"))]
    if gate_type == "tier-priority-admission" and params.get("saturation_gate") is not None:
        inner = params["saturation_gate"]
        if not isinstance(inner, str):
            raise ConfigError("must be a gate type name", field=join_path(field, "saturation_gate"))
        raw = params.get("saturation_gate_params")
        return [(inner, raw, field, "saturation_gate", "saturation_gate_params")]
    return []


def _spec_parts(spec: Any, field: str) -> _Inner:
    spec = _as_params(spec, field)
    unknown = set(spec) - {"gate_type", "gate_params"}
    if unknown:
        raise ConfigError("unknown key", field=join_path(field, sorted(unknown)[0]))
    gate_type = spec.get("gate_type")
    if not isinstance(gate_type, str) or not gate_type:
        raise ConfigError("required key missing", field=join_path(field, "gate_type"))
    return gate_type, spec.get("gate_params"), field, "gate_type", "gate_params"


def check_gate(
    gate_type: str,
    gate_params: Any,
    *,
    field: str,
    type_key: str = "gate_type",
    params_key: str = "gate_params",
) -> list[str]:
    """Validate one gate config whose keys live under ``field``; returns warnings.

    An empty ``gate_type`` means no gate. Raises ConfigError naming the dotted path.
    """
    if not gate_type:
        return []
    params_field = join_path(field, params_key)
    params = _as_params(gate_params, params_field)
    _, warnings = validate_params(
        "gate", gate_type, params, field=params_field, type_field=join_path(field, type_key)
    )
    for inner_type, raw, path, inner_type_key, inner_params_key in _inner_gates(
        gate_type, params, params_field
    ):
        warnings.extend(
            check_gate(
                inner_type, raw, field=path, type_key=inner_type_key, params_key=inner_params_key
            )
        )
    return warnings


def gate_types_in(gate_type: str, gate_params: Any) -> set[str]:
    """Every gate type named by a gate config, nested ones included (best effort)."""
    if not gate_type:
        return set()
    found = {gate_type}
    try:
        params = _as_params(gate_params, "")
        for inner_type, raw, *_ in _inner_gates(gate_type, params, ""):
            found |= gate_types_in(inner_type, raw)
    except ConfigError:
        pass
    return found
