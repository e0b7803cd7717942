"""Upstream processor flags sluiceway does not take as they are (docs/design-rules.md rules 6, 16).

The processor command passes its unrecognised arguments here: cosmetic ones (log verbosity) give
a warning, behaviour-changing ones we lack are a start-up error naming the feature, anything
else is an unknown flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sluiceway.errors import ConfigError, UnsupportedError

__all__ = ["check_upstream_flags"]

_COSMETIC: Final = (
    "-v",
    "--v",
    "--zap-devel",
    "--zap-encoder",
    "--zap-log-level",
    "--zap-stacktrace-level",
    "--zap-time-encoding",
)
_UNSUPPORTED_PREFIXES: Final = {
    "--redis.": "the deprecated --redis.* flags (use --transport-config)",
    "--pubsub.": "the deprecated --pubsub.* flags (use --transport-config)",
    "--message-queue-impl": "the deprecated --message-queue-impl flag (use --transport)",
    "--redis-tracing": "the deprecated --redis-tracing flag",
    "--transform-config-file": "request body transforms",
    "--tls-": "outbound TLS client settings",
}


def _name_and_value(arg: str) -> tuple[str, str | None]:
    name, sep, value = arg.partition("=")
    return name, value if sep else None


def _check_one(name: str, value: str | None) -> str | None:
    """A warning for a cosmetic flag; raises for unsupported or unknown ones."""
    if name in _COSMETIC or name.startswith("-v="):
        return f"{name}: log flags are ignored; use sluiceway's logging options"
    if name == "--metrics-endpoint-auth":
        if value is not None and value.lower() in ("false", "0"):
            return None
        raise UnsupportedError("metrics endpoint authentication is not supported", field=name)
    for prefix, feature in _UNSUPPORTED_PREFIXES.items():
        if name.startswith(prefix):
            raise UnsupportedError(f"{feature} is not supported", field=name)
    raise ConfigError("unknown flag", field=name)


def check_upstream_flags(args: Sequence[str]) -> list[str]:
    """Warnings for the given leftover flags (``--name=value`` or ``--name value`` forms).

    Values of the ``--name value`` form are skipped; a bare word is treated as such a value.
    """
    warnings: list[str] = []
    for arg in args:
        if not arg.startswith("-"):
            continue
        warning = _check_one(*_name_and_value(arg))
        if warning:
            warnings.append(warning)
    return warnings
