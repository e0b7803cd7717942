"""Lua scripts of the Redis broker, quota stores and Redis-backed gates (writes that must be
atomic).

Every script takes its keys through ``KEYS`` (never builds names) and ``now`` from the caller
(scripts never call Redis ``TIME``: time is the caller's, on the caller's time scale).

No modules here: one ``<name>.lua`` file per entry of ``SCRIPT_NAMES``, read by ``source(name)``.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

__all__ = ["SCRIPT_NAMES", "source"]

SCRIPT_NAMES = (
    "ack",
    "cancel",
    "claim",
    "claim_many",
    "clear_markers",
    "drop_claim",
    "leased_rate",
    "move_due",
    "quota_acquire",
    "quota_reap",
    "quota_release",
    "quarantine",
    "quota_renew",
    "rate_limit",
    "reclaim",
    "release",
    "renew",
    "retry",
    "revive",
)


@cache
def source(name: str) -> str:
    """The text of ``<name>.lua``."""
    if name not in SCRIPT_NAMES:
        raise KeyError(f"unknown Lua script {name!r}")
    return files(__package__).joinpath(f"{name}.lua").read_text(encoding="utf-8")
