"""Simulator settings: one frozen dataclass whose field names are the CLI flag names.

Durations are in scaled seconds, as every duration in sluiceway: at time scale S the wall
latency is the configured one divided by S. ``failure_injection_rate`` is a percentage
(0-100), as in llm-d-inference-sim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sluiceway.errors import ConfigError
from sluiceway.sim.profiles import PROFILES

__all__ = ["FAILURE_TYPES", "RUNTIME_FIELDS", "SimConfig", "flag_name"]

# Injected failure kinds and the HTTP status each answers (llm-d-inference-sim's menu).
FAILURE_TYPES: dict[str, int] = {
    "rate_limit": 429,
    "invalid_api_key": 401,
    "context_length": 400,
    "server_error": 503,
    "invalid_request": 400,
    "model_not_found": 404,
}

SchedulingPolicy = Literal["fcfs", "priority"]


def flag_name(field: str) -> str:
    """The CLI flag for a config field (``max_num_seqs`` -> ``--max-num-seqs``)."""
    return "--" + field.replace("_", "-")


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Everything one simulated model server needs; passed whole, replaced whole."""

    model: str = "sim-model"
    max_num_seqs: int = 5
    max_model_len: int = 1024
    block_size: int = 16
    num_gpu_blocks: int = 1024
    enable_prefix_caching: bool = True
    scheduling_policy: SchedulingPolicy = "fcfs"
    max_waiting_queue_length: int = 1000
    time_to_first_token: float = 0.02
    inter_token_latency: float = 0.01
    prefill_overhead: float = 0.0
    prefill_time_per_token: float = 0.0
    time_factor_under_load: float = 1.0
    time_to_first_token_std_dev: float = 0.0
    inter_token_latency_std_dev: float = 0.0
    failure_injection_rate: float = 0.0
    failure_types: tuple[str, ...] = ()
    failure_retry_after: str | None = None
    label_headers: tuple[str, ...] = ()
    eos_probability: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        _check_positive(self, ("max_num_seqs", "max_model_len", "block_size", "num_gpu_blocks"))
        _check_non_negative(
            self,
            (
                "max_waiting_queue_length",
                "time_to_first_token",
                "inter_token_latency",
                "prefill_overhead",
                "prefill_time_per_token",
                "time_to_first_token_std_dev",
                "inter_token_latency_std_dev",
            ),
        )
        _check_choices(self)
        object.__setattr__(self, "label_headers", tuple(h.lower() for h in self.label_headers))

    @classmethod
    def from_profile(cls, name: str, **overrides: Any) -> SimConfig:
        """A config from a named profile (profiles.py), with keyword overrides on top."""
        if name not in PROFILES:
            known = ", ".join(sorted(PROFILES))
            raise ConfigError(f"unknown profile {name!r}; known: {known}", field="--profile")
        return cls.from_mapping({**PROFILES[name], **overrides})

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> SimConfig:
        """A config from field names (``-`` and ``_`` both accepted); unknown keys are errors."""
        return cls().replace(values)

    def replace(self, values: Mapping[str, Any]) -> SimConfig:
        """A copy with ``values`` applied; an unknown key raises ConfigError naming it."""
        known = {f.name for f in dataclasses.fields(self)}
        clean: dict[str, Any] = {}
        for key, value in values.items():
            name = key.replace("-", "_")
            if name not in known:
                raise ConfigError("unknown setting", field=flag_name(name))
            clean[name] = tuple(value) if isinstance(value, list) else value
        return dataclasses.replace(self, **clean)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values, keyed by field name."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self._items()}

    def _items(self) -> list[tuple[str, Any]]:
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)]


# Settings POST /admin/config may change while requests run (latency, capacity, failures).
RUNTIME_FIELDS: frozenset[str] = frozenset(
    {
        "max_num_seqs",
        "max_waiting_queue_length",
        "time_to_first_token",
        "inter_token_latency",
        "prefill_overhead",
        "prefill_time_per_token",
        "time_factor_under_load",
        "time_to_first_token_std_dev",
        "inter_token_latency_std_dev",
        "failure_injection_rate",
        "failure_types",
        "failure_retry_after",
        "eos_probability",
    }
)


def _check_positive(cfg: SimConfig, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ConfigError(f"must be a positive integer, got {value!r}", field=flag_name(name))


def _check_non_negative(cfg: SimConfig, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(cfg, name)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"must be a number >= 0, got {value!r}", field=flag_name(name))


def _check_choices(cfg: SimConfig) -> None:
    if cfg.scheduling_policy not in ("fcfs", "priority"):
        raise ConfigError(
            f"must be fcfs or priority, got {cfg.scheduling_policy!r}",
            field="--scheduling-policy",
        )
    if not isinstance(cfg.time_factor_under_load, int | float) or cfg.time_factor_under_load < 1:
        raise ConfigError("must be >= 1", field="--time-factor-under-load")
    if not 0 <= cfg.failure_injection_rate <= 100:
        raise ConfigError("must be a percentage in [0, 100]", field="--failure-injection-rate")
    if not 0 <= cfg.eos_probability <= 1:
        raise ConfigError("must be in [0, 1]", field="--eos-probability")
    unknown = [t for t in cfg.failure_types if t not in FAILURE_TYPES]
    if unknown:
        known = ", ".join(FAILURE_TYPES)
        raise ConfigError(f"unknown {unknown[0]!r}; known: {known}", field="--failure-types")
