"""Field types for plugin and gate parameters, following upstream's parsing rules.

Gate parameters, as llm-d-async parses them: numbers may be JSON numbers or strings (``"0.8"``);
an empty string means "use the default"; integers reject non-integral values; durations use Go
syntax (``1m``, ``10s``); nested gate configs may be objects or JSON strings. Implementers of a
gate or plugin build their params model from these types.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer
from pydantic_core import PydanticUseDefault

from sluiceway.config.quantities import parse_duration, parse_quantity

__all__ = [
    "Duration",
    "FlexBool",
    "FlexFloat",
    "FlexInt",
    "JsonObject",
    "Quantity",
    "decode_json_object",
]


def _blank_to_default(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        raise PydanticUseDefault()
    return value


def _flex_float(value: Any) -> Any:
    value = _blank_to_default(value)
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    return value


def _flex_int(value: Any) -> Any:
    value = _flex_float(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{value!r} is not an integer")
        return int(value)
    return value


def _flex_bool(value: Any) -> Any:
    value = _blank_to_default(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        raise ValueError(f"{value!r} is not a boolean")
    return value


def _duration(value: Any) -> Any:
    value = _blank_to_default(value)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return parse_duration(value)
    raise ValueError("expected a duration such as 300s or 1m")


def _quantity(value: Any) -> Any:
    value = _blank_to_default(value)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return parse_quantity(value)
    raise ValueError("expected a quantity such as 500, 1k or 10Gi")


def decode_json_object(value: Any) -> Any:
    """An object given as itself or as a JSON string (``""`` means the default)."""
    value = _blank_to_default(value)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ValueError(f"not valid JSON: {exc}") from None
    return value


FlexFloat = Annotated[float, BeforeValidator(_flex_float)]
FlexInt = Annotated[int, BeforeValidator(_flex_int)]
FlexBool = Annotated[bool, BeforeValidator(_flex_bool)]
Duration = Annotated[float, BeforeValidator(_duration), PlainSerializer(lambda s: f"{s}s")]
"""A Go duration, held in seconds."""
Quantity = Annotated[int | float, BeforeValidator(_quantity)]
"""A Kubernetes quantity, held as a number."""
JsonObject = Annotated[dict[str, Any], BeforeValidator(decode_json_object)]
"""A JSON object given inline or as a JSON string."""
