"""The access log: one line per request, on the ``sluiceway.access`` logger.

Each line carries the request's id, tenant, objective, band (priority), mode, model, endpoint,
status, reason, queue time, time to first byte (``ttft_ms``: the first token of a stream,
the whole body otherwise), tokens and duration, with the method, route
and path. Text lines read ``POST /v1/chat/completions 200 id=... tenant=...``; with
``--log-format json`` each field is a key of the JSON object (the ``message`` is then the
short ``POST /v1/chat/completions 200``). Durations are wall milliseconds; a fact that does not
apply is ``-`` in text and ``null`` in JSON.

Sampling (``--access-log-sample``, 0..1): a request is written when a draw falls under the
fraction; server failures (5xx) and streams that ended early (evicted, cut) are written
whatever the draw; 0 turns the log off, failures included. A request sampled out costs one
draw: nothing is formatted. Probes (``/health``, ``/healthz``, ``/readyz``, ``/metrics``)
are never written: the HTTP metrics count them.
"""

from __future__ import annotations

import json
import logging
import random
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final, TextIO

from sluiceway.errors import ConfigError
from sluiceway.observability.logging import JsonFormatter
from sluiceway.observability.served_request import ServedRequest

__all__ = [
    "ACCESS_FIELDS",
    "ACCESS_LOGGER",
    "AccessLog",
    "access_fields",
    "access_line",
    "check_sample",
    "configure_access_log",
]

ACCESS_LOGGER: Final = "sluiceway.access"
# The fields of a line, in the order the text form writes them (after method, path, status).
ACCESS_FIELDS: Final = (
    "request_id",
    "component",
    "route",
    "tenant",
    "objective",
    "priority",
    "mode",
    "model",
    "endpoint",
    "reason",
    "stream",
    "queue_ms",
    "ttft_ms",
    "prompt_tokens",
    "completion_tokens",
    "duration_ms",
    "trace_id",
)
_TEXT_NAMES: Final = {"request_id": "id"}
_LINE: Final = ("method", "path", "status", *ACCESS_FIELDS)
_ENCODE: Final = json.JSONEncoder(default=str, ensure_ascii=False).encode


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 3)


def access_fields(record: ServedRequest, trace_id: str | None = None) -> dict[str, Any]:
    """The line's fields, by name (None for a fact that does not apply)."""
    return {
        "method": record.method,
        "path": record.path,
        "status": record.status,
        "request_id": record.request_id or None,
        "component": record.component,
        "route": record.route,
        "tenant": record.tenant or None,
        "objective": record.objective or None,
        "priority": record.priority,
        "mode": record.mode or None,
        "model": record.model or None,
        "endpoint": record.endpoint or None,
        "reason": record.reason or None,
        "stream": record.stream,
        "queue_ms": _ms(record.queue_seconds),
        "ttft_ms": _ms(record.ttfb_seconds),
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "duration_ms": _ms(record.duration_seconds),
        "trace_id": trace_id,
    }


def _text(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return f'"{text}"' if not text or " " in text or '"' in text else text


def access_line(fields: dict[str, Any]) -> str:
    """The text form: ``METHOD PATH STATUS`` then ``name=value`` pairs (``-``: not applicable)."""
    pairs = " ".join(f"{_TEXT_NAMES.get(k, k)}={_text(fields.get(k))}" for k in ACCESS_FIELDS)
    return f"{fields['method']} {fields['path']} {fields['status']} {pairs}"


class _TextFormatter(logging.Formatter):
    """``time access-line``: the line rebuilt from the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        fields = {k: getattr(record, k, None) for k in ("method", "path", "status", *ACCESS_FIELDS)}
        return f"{self.formatTime(record)} {access_line(fields)}"


class _JsonFormatter(JsonFormatter):
    """:class:`JsonFormatter`'s line (the same keys, in the same order), the access fields
    taken by name instead of searched for among the record's attributes."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or not hasattr(record, "duration_ms"):  # not an access line
            return super().format(record)
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in _LINE:
            doc[key] = getattr(record, key, None)
        return _ENCODE(doc)


def configure_access_log(fmt: str, *, stream: TextIO | None = None) -> None:
    """Write the access log as ``fmt`` (text or json) to ``stream`` (stderr), whatever
    ``--log-level`` says: the access log has its own switch, ``--access-log-sample``."""
    logger = logging.getLogger(ACCESS_LOGGER)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_JsonFormatter() if fmt == "json" else _TextFormatter())
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def check_sample(sample: float) -> float:
    """``sample`` when it is a fraction; ConfigError names the flag otherwise."""
    if not 0.0 <= sample <= 1.0:
        raise ConfigError(
            f"{sample} is not a fraction between 0 and 1", field="--access-log-sample"
        )
    return sample


class AccessLog:
    """Writes sampled records; ``draw`` is the random source (tests pass their own)."""

    def __init__(
        self,
        sample: float,
        *,
        draw: Callable[[], float] = random.random,
        logger: logging.Logger | None = None,
    ) -> None:
        self.sample = check_sample(sample)
        self._draw = draw
        self._log = logger or logging.getLogger(ACCESS_LOGGER)

    def wants(self, record: ServedRequest) -> bool:
        """Whether ``record`` gets a line (failures always do while the log is on)."""
        sample = self.sample
        if sample <= 0.0 or record.probe:
            return False
        return sample >= 1.0 or record.failed or self._draw() < sample

    def write(self, record: ServedRequest, trace_id: str | None = None) -> None:
        if not self.wants(record) or not self._log.isEnabledFor(logging.INFO):
            return
        fields = access_fields(record, trace_id)
        log = self._log
        # As log.info(...), less looking up the caller's frame: a line's place in the code is
        # always this one.
        args = (record.method, record.path, record.status)
        log.handle(
            log.makeRecord(log.name, logging.INFO, "", 0, "%s %s %s", args, None, extra=fields)
        )
