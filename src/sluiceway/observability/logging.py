"""Process logging: text or JSON lines, and quiet broker outages.

``configure_logging`` is called once by each long-running command (``--log-level``,
``--log-format``). JSON lines carry ``time`` (ISO 8601, UTC), ``level``, ``logger``,
``message`` and, for an exception, ``error``; extra fields given with ``extra=`` pass through.

Outages: a connection error is not a bug, and a Redis outage must not write a traceback per
poll. :class:`ConnectionNoise` strips tracebacks from records caused by a connection error and
keeps them only at debug level; :class:`OutageLog` (one per broker, see :func:`outage_log`)
says once that the broker is lost and once that it is back.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import weakref
from datetime import UTC, datetime
from typing import Any, Final, TextIO

from sluiceway.errors import ConfigError, without_secrets

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "ConnectionNoise",
    "JsonFormatter",
    "OutageLog",
    "RedactingFormatter",
    "broker_outage_known",
    "configure_logging",
    "is_connection_error",
    "named_outage_log",
    "outage_log",
]

LOG_LEVELS: Final = ("debug", "info", "warning", "error")
LOG_FORMATS: Final = ("text", "json")
TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# The attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line, for log pipelines."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                doc[key] = value
        if record.exc_info and record.exc_info[1] is not None:
            doc["error"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
            doc["traceback"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, ensure_ascii=False)


class RedactingFormatter(logging.Formatter):
    """Another formatter's lines with every registered secret replaced by ``***``
    (:func:`sluiceway.errors.without_secrets`): the last guard, whatever a message or
    traceback holds."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self._inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return without_secrets(self._inner.format(record))


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def is_connection_error(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) is a lost connection or a timeout talking to it."""
    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        redis_kinds: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError)
    except ImportError:  # the redis extra is optional
        redis_kinds = ()
    kinds: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError, *redis_kinds)
    return any(isinstance(link, kinds) for link in _chain(exc))


def _record_error(record: logging.LogRecord) -> BaseException | None:
    """The exception a record is about: its ``exc_info``, or one passed as an argument."""
    if record.exc_info and record.exc_info[1] is not None:
        return record.exc_info[1]
    args = record.args if isinstance(record.args, tuple) else ()
    return next((arg for arg in args if isinstance(arg, BaseException)), None)


class ConnectionNoise(logging.Filter):
    """Records caused by a connection error (with a traceback, or naming the error) become one
    line without a traceback; while a broker outage is being told by :class:`OutageLog`, they
    are kept out (or at debug level, when the log is): every loop that touches a lost broker
    would otherwise say so each round."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = _record_error(record)
        if exc is None or not is_connection_error(exc):
            return True
        outage = broker_outage_known()
        if outage and logging.getLogger().getEffectiveLevel() > logging.DEBUG:
            return False
        if record.exc_info is not None:
            record.msg, record.args = f"{record.getMessage()}: {exc}", None
            record.exc_info, record.exc_text = None, None
        if outage:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def configure_logging(level: str, fmt: str = "text", *, stream: TextIO | None = None) -> None:
    """Set up the root logger for a command; ConfigError names the flag at fault."""
    if level.lower() not in LOG_LEVELS:
        raise ConfigError(f"unknown log level {level!r} (known: {', '.join(LOG_LEVELS)})",
                          field="--log-level")  # fmt: skip
    if fmt not in LOG_FORMATS:
        raise ConfigError(f"unknown log format {fmt!r} (known: text, json)", field="--log-format")
    handler = logging.StreamHandler(stream or sys.stderr)
    inner = JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(RedactingFormatter(inner))
    handler.addFilter(ConnectionNoise())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


class OutageLog:
    """Says once that a dependency is lost and once that it is back.

    ``failed`` logs a WARNING (no traceback) on the first connection failure; later failures
    stay at debug level, counted, until ``succeeded`` logs, at the same level as the loss, that
    it is back, how long it was gone and how many calls failed meanwhile (``failures``, also
    the total over the process's life). A loss within ``quiet_for`` wall seconds of the last one (a
    flapping link) is told at debug level, lost and back alike. Errors that are not connection
    errors are bugs or bad data: they keep their traceback (ERROR) every time.
    """

    def __init__(self, name: str, logger: logging.Logger, *, quiet_for: float = 30.0) -> None:
        self._name = name
        self._log = logger
        self._quiet_for = quiet_for
        self._lost_at: float | None = None
        self._level = logging.WARNING
        self._last_loss = float("-inf")
        self._during = 0  # failures since the loss
        self.failures = 0  # connection failures over the process's life

    @property
    def lost(self) -> bool:
        return self._lost_at is not None

    def failed(self, exc: BaseException, doing: str) -> None:
        """Report a failure of ``doing`` (e.g. "ingest of team-a")."""
        if not is_connection_error(exc):
            self._log.error("%s failed", doing, exc_info=exc)
            return
        self.failures += 1
        self._during += 1
        if self._lost_at is not None:
            self._log.debug("%s: %s still unreachable: %s", doing, self._name, str(exc))
            return
        now = time.monotonic()
        flapping = now - self._last_loss < self._quiet_for
        self._lost_at = self._last_loss = now
        self._during = 1
        self._level = logging.DEBUG if flapping else logging.WARNING
        # The error as text: a record naming a connection error is otherwise kept out.
        self._log.log(self._level, "%s lost (%s): %s; retrying", self._name, doing, str(exc))

    def succeeded(self) -> None:
        """Report a success; logs that the dependency is back when it was lost."""
        if self._lost_at is None:
            return
        gone, self._lost_at = time.monotonic() - self._lost_at, None
        failed = f"{self._during} failed call{'s' if self._during != 1 else ''}"
        self._log.log(self._level, "%s is back after %.1f s (%s)", self._name, gone, failed)


_OUTAGES: weakref.WeakKeyDictionary[object, OutageLog] = weakref.WeakKeyDictionary()


def broker_outage_known() -> bool:
    """True while some broker of this process is known lost (see :func:`outage_log`)."""
    return any(outage.lost for outage in list(_OUTAGES.values()))


def outage_log(dependency: object, name: str, logger: logging.Logger) -> OutageLog:
    """The one :class:`OutageLog` of ``dependency`` (e.g. a broker) in this process, so that
    all its users (one ingest per queue) share one lost / back pair of lines."""
    found = _OUTAGES.get(dependency)
    if found is None:
        found = _OUTAGES[dependency] = OutageLog(name, logger)
    return found


_NAMED: dict[str, OutageLog] = {}
_NAMED_LIMIT = 1024


def named_outage_log(name: str, logger: logging.Logger) -> OutageLog:
    """The one :class:`OutageLog` of a dependency known by name (an upstream URL)."""
    found = _NAMED.get(name)
    if found is None:
        if len(_NAMED) >= _NAMED_LIMIT:
            _NAMED.clear()
        found = _NAMED[name] = OutageLog(name, logger)
    return found
