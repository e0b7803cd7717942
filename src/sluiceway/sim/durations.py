"""Durations as the command line and ``/admin/config`` take them: ``12ms``, ``0.5s``, ``250us``.

A bare number is milliseconds, as llm-d-inference-sim's integer latency flags; the result is
scaled seconds, the unit of ``SimConfig``.
"""

from __future__ import annotations

import re
from typing import Final

from sluiceway.errors import ConfigError

__all__ = ["DURATION_FIELDS", "parse_latency", "to_milliseconds"]

# The SimConfig fields that hold a latency.
DURATION_FIELDS: Final = (
    "time_to_first_token",
    "inter_token_latency",
    "time_to_first_token_std_dev",
    "inter_token_latency_std_dev",
    "prefill_overhead",
    "prefill_time_per_token",
)
_DURATION: Final = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(us|µs|ms|s|m)?\s*$")
_UNIT_SECONDS: Final = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, None: 1e-3}


def parse_latency(value: str | float, field: str) -> float:
    """Seconds from ``12ms`` / ``0.5s`` / ``250us`` / ``12`` / ``12.5`` (bare = milliseconds).

    Raises ConfigError naming ``field`` (a flag or a JSON key) for anything else.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value < 0:
            raise ConfigError(f"must be a duration >= 0, got {value!r}", field=field)
        return float(value) * 1e-3
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        raise ConfigError(f"not a duration: {value!r} (e.g. 12ms, 0.5s, or 12 for ms)", field=field)
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def to_milliseconds(seconds: float) -> float:
    """Scaled seconds as the milliseconds a bare number means (rounded to a nanosecond)."""
    return round(seconds * 1e3, 6)
