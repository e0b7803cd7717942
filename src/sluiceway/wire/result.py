"""The result record pushed to a result list, in llm-d-async's format.

Encoding is compact JSON in the key order ``id``, ``status_code``, ``payload``, ``error_code``,
``error_message``, ``request_token``; the error fields only when set. Consumers grep for
``"status_code":200``. A result without an HTTP answer carries ``"status_code":0``, as the
multi-tenant guide's checks read it (``jq .status_code`` is 0, not null). llm-d-async leaves
the key out there (``json:"status_code,omitempty"``); a Go reader decodes both as 0, and both
decode here as 0, so writing it costs no reader anything.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from sluiceway.errors import WireError
from sluiceway.wire.codes import DEFAULT_MESSAGES, ErrorCode

__all__ = [
    "TOO_MANY_REQUESTS_MESSAGE",
    "TOO_MANY_REQUESTS_PAYLOAD",
    "ResultRecord",
    "decode_result",
    "encode_result",
    "error_payload",
]

TOO_MANY_REQUESTS_MESSAGE: Final = "Too Many Requests"
# Upstream's literal drop payload for tier-priority-admission (with its spaces), kept byte-exact.
TOO_MANY_REQUESTS_PAYLOAD: Final = '{"error": "Too Many Requests", "code": 429}'


# One encoder for every record (``json.dumps`` with options builds a new one per call).
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _compact(obj: Any) -> str:
    return _ENCODER.encode(obj)


# A JSON string literal with only the escapes JSON requires (non-ASCII kept as is).
_string: Final[Callable[[str], str]] = json.encoder.encode_basestring


def error_payload(message: str) -> str:
    """The backward-compatible payload of a non-HTTP failure: ``{"error":"<message>"}``."""
    return _compact({"error": message})


@dataclass(frozen=True, slots=True)
class ResultRecord:
    """One request's outcome. ``status_code`` > 0 means ``payload`` is an HTTP answer's body."""

    id: str
    payload: str
    status_code: int = 0
    error_code: str = ""
    error_message: str = ""
    request_token: str = ""

    @property
    def is_http(self) -> bool:
        return self.status_code > 0

    @classmethod
    def ok(
        cls, id: str, status: int, payload: str | bytes, *, request_token: str = ""
    ) -> ResultRecord:
        """An HTTP answer (any status > 0, errors included); bytes are decoded as UTF-8."""
        if status <= 0:
            raise ValueError("an HTTP status must be > 0")
        body = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
        return cls(id=id, payload=body, status_code=status, request_token=request_token)

    @classmethod
    def error(
        cls, id: str, code: ErrorCode, message: str | None = None, *, request_token: str = ""
    ) -> ResultRecord:
        """A non-HTTP failure; ``message`` defaults to upstream's text for ``code``."""
        text = DEFAULT_MESSAGES[code] if message is None else message
        return cls(
            id=id,
            payload=error_payload(text),
            error_code=str(code),
            error_message=text,
            request_token=request_token,
        )

    @classmethod
    def too_many_requests(cls, id: str, *, request_token: str = "") -> ResultRecord:
        """The ``tier-priority-admission`` drop: GATE_DROPPED with upstream's 429 payload."""
        return cls(
            id=id,
            payload=TOO_MANY_REQUESTS_PAYLOAD,
            error_code=str(ErrorCode.GATE_DROPPED),
            error_message=TOO_MANY_REQUESTS_MESSAGE,
            request_token=request_token,
        )

    def encode(self) -> str:
        return encode_result(self)


def encode_result(record: ResultRecord) -> str:
    """The list element: compact JSON, contract key order, empty optional fields left out.

    Built from parts (the standard library's C string escaper, as ``json`` itself uses with
    ``ensure_ascii=False``): one record per request, at a third of a generic encode's cost and
    byte-identical to it (pinned by a property test)."""
    parts = ['{"id":', _string(record.id), ',"status_code":', str(max(0, int(record.status_code)))]
    parts += (',"payload":', _string(record.payload))
    if record.error_code:
        parts += (',"error_code":', _string(record.error_code))
    if record.error_message:
        parts += (',"error_message":', _string(record.error_message))
    if record.request_token:
        parts += (',"request_token":', _string(record.request_token))
    parts.append("}")
    return "".join(parts)


def _field(obj: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = obj.get(key, default)
    if value is None:
        return default
    if not isinstance(value, kind) or isinstance(value, bool):
        raise WireError(f"result.{key} must be {kind.__name__}")
    return value


def decode_result(text: str | bytes) -> ResultRecord:
    """Parse a result record (ours or upstream's); raises WireError when it is not one."""
    try:
        obj = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(f"result is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise WireError("result is not a JSON object")
    return ResultRecord(
        id=_field(obj, "id", str, ""),
        payload=_field(obj, "payload", str, ""),
        status_code=_field(obj, "status_code", int, 0),
        error_code=_field(obj, "error_code", str, ""),
        error_message=_field(obj, "error_message", str, ""),
        request_token=_field(obj, "request_token", str, ""),
    )
