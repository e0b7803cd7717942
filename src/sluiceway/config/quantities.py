"""Kubernetes quantities (``1k``, ``10Gi``) and Go durations (``1m30s``, ``200ms``).

Both appear in upstream configuration documents; numbers are accepted as they are.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Final

__all__ = ["parse_duration", "parse_quantity"]

_SUFFIXES: Final[dict[str, Decimal]] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY: Final = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([a-zA-Z]*)$")

_UNITS: Final[dict[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART: Final = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_quantity(value: str | int | float) -> int | float:
    """A Kubernetes quantity as a number: ``"1k"`` -> 1000, ``"10Gi"`` -> 10737418240.

    Integral results come back as ``int``. Raises ValueError for anything else.
    """
    if isinstance(value, bool):
        raise ValueError("a quantity must be a number or a string like 1k or 10Gi")
    if isinstance(value, int | float):
        return value
    match = _QUANTITY.match(value.strip())
    if match is None or match.group(2) not in _SUFFIXES:
        raise ValueError(f"{value!r} is not a quantity (examples: 500, 1k, 1G, 10Gi)")
    try:
        number = Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a quantity") from None
    return int(number) if number == number.to_integral_value() else float(number)


def parse_duration(value: str | int | float) -> float:
    """A Go duration in seconds: ``"1m30s"`` -> 90.0, ``"200ms"`` -> 0.2; numbers are seconds.

    A bare numeric string is also read as seconds. Raises ValueError for anything else.
    """
    if isinstance(value, bool):
        raise ValueError("a duration must be a number of seconds or a string like 1m30s")
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # an integer past a double: a ValueError, so a ConfigError
            raise ValueError("a duration must be a number of seconds a double can hold") from None
    text = value.strip()
    sign = -1.0 if text.startswith("-") else 1.0
    text = text.lstrip("+-")
    try:
        return sign * float(text)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{value!r} is not a duration (examples: 300s, 1m, 200ms, 1h30m)")
    return sign * sum(float(number) * _UNITS[unit] for number, unit in parts)
