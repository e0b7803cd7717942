"""``/admin/config``: run-time settings in the command line's units, errors named by JSON key.

Keys are the flag names without ``--`` (``inter-token-latency``) or the ``SimConfig`` field
names (``inter_token_latency``). Durations are what the flags take: a bare number is
milliseconds, a string may carry a unit (``"500ms"``, ``"0.5s"``, ``"250us"``). GET answers
with the same units, so what it returns can be posted back unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sluiceway.errors import ConfigError
from sluiceway.sim.config import RUNTIME_FIELDS, SimConfig, flag_name
from sluiceway.sim.durations import DURATION_FIELDS, parse_latency, to_milliseconds

__all__ = ["apply_admin_changes", "config_view"]


def apply_admin_changes(config: SimConfig, body: Mapping[str, Any]) -> SimConfig:
    """``config`` with the settings of ``body`` applied.

    Raises ConfigError whose ``field`` is the JSON key at fault: unknown, fixed at start (KV
    pool, model, ...), or a bad value.
    """
    changes: dict[str, Any] = {}
    keys: dict[str, str] = {}  # flag name -> the JSON key the client used
    for key, value in body.items():
        name = key.replace("-", "_")
        if name not in RUNTIME_FIELDS:
            fixed = name in config.as_dict()
            raise ConfigError(
                "cannot be changed at run time" if fixed else "unknown setting", field=key
            )
        changes[name] = parse_latency(value, key) if name in DURATION_FIELDS else value
        keys[flag_name(name)] = key
    try:
        return config.replace(changes)
    except ConfigError as exc:
        message = str(exc).removeprefix(f"{exc.field}: ")
        raise ConfigError(message, field=keys.get(exc.field or "", exc.field)) from exc


def config_view(config: SimConfig) -> dict[str, Any]:
    """The whole configuration as GET /admin/config shows it (durations in milliseconds)."""
    view = config.as_dict()
    for name in DURATION_FIELDS:
        view[name] = to_milliseconds(view[name])
    return view
