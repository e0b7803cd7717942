"""Upstream's deprecated processor flags, translated into a transport config as upstream does.

llm-d-async's own Helm chart still starts the processor with ``--message-queue-impl`` and the
``--redis.ss.*`` flags, so a drop-in must take them: each one used logs a deprecation
warning; they are ignored (with a warning) when any ``--transport*`` flag or ``--config`` is
set. ``--message-queue-impl`` values: ``redis-sortedset`` (the default here), ``redis-pubsub``
(upstream's default: not supported, a start-up error naming it), ``gcp-pubsub`` and its
retired alias ``gcp-pubsub-gated`` (a start-up error that says to pass the subscriptions with
``--transport gcp-pubsub --transport-config-file``: no deprecated flag describes them).
``--redis.url`` and
``--redis-tracing`` come along; the other ``--redis.*`` flags belong to redis-pubsub.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from sluiceway.errors import ConfigError, UnsupportedError

__all__ = ["LegacyFlags", "parse_legacy_flags"]

_IMPL: Final = "--message-queue-impl"
_URL: Final = "--redis.url"
_TRACING: Final = "--redis-tracing"
_SS: Final = "--redis.ss."
_SS_NAMES: Final = frozenset(
    {
        "igw-base-url",
        "request-path-url",
        "inference-objective",
        "request-queue-name",
        "result-queue-name",
        "queues-config",
        "queues-config-file",
        "poll-interval-ms",
        "batch-size",
        "gate-type",
        "gate-params",
    }
)
# Upstream's defaults for the single-queue flags.
_SS_DEFAULTS: Final = {
    "request-path-url": "/v1/completions",
    "request-queue-name": "request-sortedset",
    "result-queue-name": "result-list",
    "poll-interval-ms": "1000",
    "batch-size": "10",
    "gate-params": "{}",
}
_UNSUPPORTED_IMPLS: Final = {
    "redis-pubsub": "the redis-pubsub transport (use redis-sortedset)",
    "gcp-pubsub": "configuring gcp-pubsub by deprecated flags (pass --transport gcp-pubsub "
    "--transport-config-file FILE with its topics)",
}


def _is_legacy(name: str) -> bool:
    return name in (_IMPL, _URL, _TRACING) or (
        name.startswith(_SS) and name[len(_SS) :] in _SS_NAMES
    )


@dataclass
class LegacyFlags:
    """The deprecated flags found on a command line, and what is left of it."""

    values: dict[str, str] = field(default_factory=dict)  # flag name -> value
    rest: list[str] = field(default_factory=list)

    def warnings(self, *, new_surface: bool) -> list[str]:
        """One deprecation warning per flag used."""
        if new_surface:
            return [
                f"{n}: deprecated flag ignored because --transport/--config is set"
                for n in self.values
            ]
        return [f"{n}: deprecated flag, translated into the transport config" for n in self.values]

    def transport(self) -> tuple[str, str] | None:
        """(transport, transport config JSON) the flags describe; None when there are none."""
        if not self.values:
            return None
        impl = self.values.get(_IMPL, "redis-sortedset")
        impl = "gcp-pubsub" if impl == "gcp-pubsub-gated" else impl
        if impl in _UNSUPPORTED_IMPLS:
            raise UnsupportedError(f"{_UNSUPPORTED_IMPLS[impl]} is not supported", field=_IMPL)
        if impl != "redis-sortedset":
            raise ConfigError(f"unknown message queue implementation {impl!r}", field=_IMPL)
        return impl, json.dumps(self._sorted_set_config())

    def _ss(self, name: str) -> str:
        return self.values.get(_SS + name, _SS_DEFAULTS.get(name, ""))

    def _sorted_set_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "result_queue_name": self._ss("result-queue-name"),
            "poll_interval_ms": _int(self._ss("poll-interval-ms"), _SS + "poll-interval-ms"),
            "batch_size": _int(self._ss("batch-size"), _SS + "batch-size"),
            "queues": self._queues(),
        }
        if self.values.get(_URL):
            config["url"] = self.values[_URL]
        if self.values.get(_TRACING, "false").lower() in ("", "true", "1"):
            config["enable_tracing"] = True
        return config

    def _queues(self) -> list[Any]:
        if self._ss("queues-config"):
            return _json_list(self._ss("queues-config"), _SS + "queues-config")
        if self._ss("queues-config-file"):
            path = Path(self._ss("queues-config-file"))
            try:
                text = path.read_text()
            except OSError as exc:
                raise ConfigError(
                    f"cannot read {path}: {exc}", field=_SS + "queues-config-file"
                ) from None
            return _json_list(text, _SS + "queues-config-file")
        if not self._ss("igw-base-url"):
            raise ConfigError("required in single-queue mode", field=_SS + "igw-base-url")
        queue: dict[str, Any] = {
            "queue_name": self._ss("request-queue-name"),
            "worker_pool_id": "default",
            "igw_base_url": self._ss("igw-base-url"),
            "request_path_url": self._ss("request-path-url"),
            "inference_objective": self._ss("inference-objective"),
        }
        if self._ss("gate-type"):
            queue["gate_type"] = self._ss("gate-type")
            queue["gate_params"] = self._ss("gate-params")
        return [queue]


def _int(value: str, flag: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"not an integer: {value!r}", field=flag) from None


def _json_list(text: str, flag: str) -> list[Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"not JSON: {exc}", field=flag) from None
    if not isinstance(value, list):
        raise ConfigError("must be a JSON array of queues", field=flag)
    return value


def parse_legacy_flags(args: Sequence[str]) -> LegacyFlags:
    """Take the deprecated flags (``--name=value`` or ``--name value``) out of ``args``."""
    found = LegacyFlags()
    items = list(args)
    i = 0
    while i < len(items):
        name, sep, value = items[i].partition("=")
        if not _is_legacy(name):
            found.rest.append(items[i])
            i += 1
            continue
        if not sep and name != _TRACING and i + 1 < len(items):
            value, i = items[i + 1], i + 1
        found.values[name] = value
        i += 1
    return found
