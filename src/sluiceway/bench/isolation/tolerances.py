"""The isolation checks' tolerances and their precedence (pure).

A tolerance is looked up as ``AMT_LEVEL_<L>_<KEY>`` > ``AMT_<KEY>`` > the level's default >
the default; an empty string counts as unset, so an operator can clear an override without
removing the variable. The names are the upstream nightly validator's, so one settings file
serves both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["DEFAULTS", "LEVEL_DEFAULTS", "tolerance"]

DEFAULTS: Final[Mapping[str, float]] = {
    "TTFT_FACTOR": 1.5,
    "TTFT_ABS": 0.3,
    "E2E_FACTOR": 1.25,
    "E2E_ABS": 0.3,
    "RPS_FACTOR": 0.85,
    "TPS_FACTOR": 0.85,
    "STREAM_SANITY_RATIO": 0.6,
    "ASYNC_SAT_MIN": 0.9,
    "ASYNC_SAT_P50_MIN": 0.8,
    "ASYNC_RPS_FACTOR": 0.7,
    "MIN_SAMPLES": 20,
    "WARMUP_S": 15,
    "EXPECTED_OUTPUT_TOKENS": 128,
    "CAPACITY_SLACK": 1,
}

# At 20 % the model server's batch grows from 2 to 10 under async load, so per-request speed
# drops more than at the higher levels.
LEVEL_DEFAULTS: Final[Mapping[int, Mapping[str, float]]] = {
    20: {"RPS_FACTOR": 0.75, "TPS_FACTOR": 0.75, "E2E_FACTOR": 1.35},
}


def tolerance(
    key: str,
    level: int | None,
    env: Mapping[str, str],
    level_defaults: Mapping[int, Mapping[str, float]] = LEVEL_DEFAULTS,
) -> float:
    """The value of ``key`` at ``level`` (None: not level-specific); unknown keys raise
    :class:`KeyError`, a value that is not a number raises :class:`ValueError`."""
    if key not in DEFAULTS:
        raise KeyError(key)
    names = [f"AMT_{key}"]
    if level is not None:
        names.insert(0, f"AMT_LEVEL_{level}_{key}")
    for name in names:
        raw = env.get(name, "")
        if raw.strip():
            try:
                return float(raw)
            except ValueError:
                raise ValueError(f"{name}={raw!r} is not a number") from None
    if level is not None and key in level_defaults.get(level, {}):
        return float(level_defaults[level][key])
    return float(DEFAULTS[key])
