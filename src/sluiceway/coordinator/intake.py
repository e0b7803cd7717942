"""Checks on an incoming request before anything is queued or forwarded (pure).

The body is JSON as the router reads it (orjson: ``NaN``, ``1e309`` and lone surrogates are not
JSON) nested at most ``MAX_NESTING`` (64) levels. Order as upstream's step: unknown mode,
``stream: true`` outside passthrough, missing model, unserved model; then the request id
(``x-request-id``, ``^[a-zA-Z0-9-]{1,128}$``, else the one the coordinator minted for the
request, else a fresh UUID) and the deadline (the timeout
header in positive whole seconds, clamped by the mode's maximum, else the mode's default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

import orjson

from sluiceway.config.coordinator import AsyncBrokerParams
from sluiceway.config.documents import MAX_NESTING, nests_deeper
from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.routes import TenantRoutes
from sluiceway.wire import headers as wire_headers
from sluiceway.wire.request_ids import new_request_id

__all__ = [
    "AsyncMode",
    "RequestBody",
    "mode_of",
    "parse_request_body",
    "request_id_of",
    "timeout_of",
]

_REQUEST_ID: Final = re.compile(r"^[a-zA-Z0-9-]{1,128}$")


class AsyncMode(Enum):
    """How a classified request runs."""

    PASSTHROUGH = wire_headers.MODE_PASSTHROUGH
    WAIT = wire_headers.MODE_WAIT
    ENQUEUE = wire_headers.MODE_ENQUEUE


def mode_of(value: str | None) -> AsyncMode | None:
    """The mode a header value asks for; None when absent (forward untouched)."""
    if value is None:
        return None
    try:
        return AsyncMode(value.strip().lower())
    except ValueError:
        known = ", ".join(m.value for m in AsyncMode)
        raise RequestRejected(400, "invalid_mode", f"unknown mode {value!r} ({known})") from None


@dataclass(frozen=True, slots=True)
class RequestBody:
    """A parsed OpenAI request body and the model it names."""

    doc: dict[str, Any]
    model: str
    stream: bool


def parse_request_body(raw: bytes, mode: AsyncMode, routes: TenantRoutes) -> RequestBody:
    """Parse and check the body of a classified request."""
    doc = _parsed(raw)
    if not isinstance(doc, dict):
        raise RequestRejected(400, "invalid_json", "request body must be a JSON object")
    stream = doc.get("stream") is True
    if stream and mode is not AsyncMode.PASSTHROUGH:
        raise RequestRejected(400, "stream_unsupported", "stream is only supported in passthrough")
    model = doc.get("model")
    if not isinstance(model, str) or not model:
        raise RequestRejected(400, "missing_model", "the request needs a model")
    if not routes.serves(model):
        raise RequestRejected(404, "model_not_found", f"model {model!r} is not served here")
    return RequestBody(doc, model, stream)


def _parsed(raw: bytes) -> Any:
    """The body as JSON, read as the router reads it (strict: no NaN, no infinities, no lone
    surrogates) and at most ``MAX_NESTING`` levels deep."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth" in exc.msg:  # orjson's own bound (1024 levels), past ours
            raise _too_deep() from None
        raise RequestRejected(400, "invalid_json", f"request body is not JSON: {exc}") from None
    if nests_deeper(doc, MAX_NESTING):
        raise _too_deep()
    return doc


def _too_deep() -> RequestRejected:
    return RequestRejected(400, "too_deep", f"request body nested deeper than {MAX_NESTING} levels")


def request_id_of(headers: Mapping[str, str], minted: str | None = None) -> tuple[str, bool]:
    """The client's ``x-request-id`` (validated) and True, or the coordinator's own id (the
    ``minted`` one it added to the headers, else a fresh one) and False."""
    given = headers.get(wire_headers.REQUEST_ID)
    if given is None:
        return new_request_id(), False
    if given == minted:
        return given, False
    if not _REQUEST_ID.match(given):
        raise RequestRejected(
            400, "invalid_request_id", "x-request-id must match ^[a-zA-Z0-9-]{1,128}$"
        )
    return given, True


def timeout_of(value: str | None, mode: AsyncMode, params: AsyncBrokerParams) -> float:
    """Seconds from now to the request's deadline."""
    cap: float | None
    if mode is AsyncMode.WAIT:
        default, cap = params.timeouts.wait_seconds()
    else:
        default, cap = params.timeouts.enqueue_seconds()
    if value is None:
        return default
    try:
        seconds = int(value)
    except ValueError:
        seconds = 0
    if seconds <= 0:
        raise RequestRejected(
            400, "invalid_timeout", f"{params.timeout_header} must be a positive whole number"
        )
    return float(seconds) if cap is None else min(float(seconds), cap)
