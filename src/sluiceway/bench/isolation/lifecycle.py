"""inference-perf's ``per_request_lifecycle_metrics.json`` as request records (pure parsing).

Each entry has ``start_time``, ``end_time``, ``info`` and ``error``. Token timing and counts sit
in ``info.response_metrics`` (``output_token_times``, ``chunk_times``, ``output_tokens``,
``server_usage``) in current releases and directly in ``info`` in older ones; both are read.
The time to first token is the first positive token time (else chunk time) minus the start,
dropped when it falls outside ``[0, e2e]`` (a stamp from another clock). The server's
``usage.completion_tokens`` is preferred to the client's count. An error entry keeps the status
inference-perf recorded (``error_type: "HTTP Error 504"``); one without a status whose type or
message says it timed out is the client giving up (its ``request_timeout``), so it counts as
abandoned, as the builtin client's do. inference-perf stamps with a monotonic clock;
:func:`pin_to_wall` moves such stamps onto wall time.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sluiceway.bench.isolation.records import RequestRecord

__all__ = ["EPOCH_FLOOR", "parse_entry", "pin_to_wall", "read_lifecycle_file"]

EPOCH_FLOOR = 1e9  # stamps whose median is above this are Unix times already
_HTTP_ERROR = re.compile(r"HTTP Error (\d{3})")
_TIMEOUT = re.compile(r"time\s*out|timed out", re.IGNORECASE)


def _metrics(info: Mapping[str, Any]) -> Mapping[str, Any]:
    nested = info.get("response_metrics")
    return nested if isinstance(nested, Mapping) else info


def _first_positive(times: Any) -> float | None:
    if not isinstance(times, list):
        return None
    for t in times:
        if isinstance(t, (int, float)) and t > 0:
            return float(t)
    return None


def _ttft(start: float, end: float, metrics: Mapping[str, Any]) -> float | None:
    first = _first_positive(metrics.get("output_token_times"))
    if first is None:
        first = _first_positive(metrics.get("chunk_times"))
    if first is None:
        return None
    ttft = first - start
    return ttft if 0 <= ttft <= end - start else None


def _tokens(metrics: Mapping[str, Any]) -> int:
    usage = metrics.get("server_usage")
    if isinstance(usage, Mapping) and isinstance(usage.get("completion_tokens"), int):
        return int(usage["completion_tokens"])
    count = metrics.get("output_tokens")
    return int(count) if isinstance(count, int) else 0


def _error(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The entry's error as a mapping (a bare string is its message); None when it succeeded."""
    error = entry.get("error")
    if not error:
        return None
    return error if isinstance(error, Mapping) else {"error_msg": str(error)}


def _error_status(error: Mapping[str, Any]) -> int:
    """The HTTP status inference-perf recorded for an error answer; 0 when none came."""
    found = _HTTP_ERROR.search(str(error.get("error_type") or ""))
    return int(found.group(1)) if found else 0


def _gave_up(error: Mapping[str, Any]) -> bool:
    """The client's own timeout: no answer came, and the error says it timed out."""
    text = f"{error.get('error_type') or ''} {error.get('error_msg') or ''}"
    return _error_status(error) == 0 and _TIMEOUT.search(text) is not None


def parse_entry(entry: Any) -> RequestRecord | None:
    """One entry as a record; None when it is malformed (no numeric start and end)."""
    if not isinstance(entry, Mapping):
        return None
    start, end = entry.get("start_time"), entry.get("end_time")
    if not isinstance(start, (int, float)) or not isinstance(end, (int, float)):
        return None
    info = entry.get("info")
    metrics = _metrics(info) if isinstance(info, Mapping) else {}
    error = _error(entry)
    return RequestRecord(
        start=float(start),
        end=float(end),
        ttft=_ttft(float(start), float(end), metrics),
        tokens=_tokens(metrics),
        ok=error is None,
        abandoned=error is not None and _gave_up(error),
        status=200 if error is None else _error_status(error),
    )


def pin_to_wall(
    records: Sequence[RequestRecord], harness_stop: float, clock_offset: float | None = None
) -> list[RequestRecord]:
    """Move monotonic stamps onto wall time; Unix stamps stay. With ``clock_offset`` (wall
    minus monotonic time, read on the same machine) the shift is exact; without it the last
    end is pinned to ``harness_stop``, which lands records early by the time the harness
    spent writing its reports before it stopped (2.8-3.9 s seen with inference-perf)."""
    if not records or statistics.median(r.start for r in records) > EPOCH_FLOOR:
        return list(records)
    shift = clock_offset
    if shift is None:
        shift = harness_stop - max(r.end for r in records)
    return [replace(r, start=r.start + shift, end=r.end + shift) for r in records]


def read_lifecycle_file(path: Path) -> list[RequestRecord]:
    """The well-formed records of one file (a JSON list); a file that is not a list is an
    error naming it."""
    data = json.loads(path.read_text())
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of requests")
    return [r for r in (parse_entry(e) for e in data) if r is not None]
