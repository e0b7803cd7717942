"""The lines of a batch's output and error files, in OpenAI's shape (pure).

Each line is ``{"id", "custom_id", "response", "error"}``. A request answered 2xx goes to the
output file with ``response {status_code, request_id, body}`` and ``error`` null. One answered
with another status goes to the error file with its response (``error`` null), as OpenAI
writes it. One that got no HTTP answer (its deadline passed, a gate dropped it, it was
cancelled) goes to the error file with ``response`` null and ``error {code, message}``;
lines withdrawn by a cancel or left at the window's end are ``batch_cancelled`` and
``batch_expired``, OpenAI's codes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from sluiceway.wire import ErrorCode, ResultRecord

__all__ = [
    "CANCELLED_CODE",
    "EXPIRED_CODE",
    "OutputLine",
    "cancelled_line",
    "expired_line",
    "line_for_result",
    "line_id",
]

EXPIRED_CODE: Final = "batch_expired"
CANCELLED_CODE: Final = "batch_cancelled"
_EXPIRED_MESSAGE: Final = "This request could not be executed before the completion window expired."
_CANCELLED_MESSAGE: Final = "This request was cancelled before it ran."


@dataclass(frozen=True, slots=True)
class OutputLine:
    """One line to append (``text`` ends with a newline) and which file it belongs to."""

    text: bytes
    ok: bool  # True: the output file; False: the error file
    outcome: str = ""  # completed, failed, expired or cancelled (metrics)

    @property
    def counted_as(self) -> str:
        return self.outcome or ("completed" if self.ok else "failed")


def line_id(batch_id: str, number: int) -> str:
    """The ``id`` of a batch line: ``batch_req_<batch hex>_<line number>``."""
    return f"batch_req_{batch_id.removeprefix('batch_')}_{number}"


def _encoded(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _body(payload: str) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        return payload


def _error_line(
    ident: str, custom_id: str, code: str, message: str, outcome: str = "failed"
) -> OutputLine:
    doc = {
        "id": ident,
        "custom_id": custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }
    return OutputLine(_encoded(doc), ok=False, outcome=outcome)


def line_for_result(
    ident: str, custom_id: str, request_id: str, record: ResultRecord
) -> OutputLine:
    """The line for a stored result (a line's deadline is its batch's window: a deadline
    exceeded reads ``batch_expired``)."""
    if record.is_http:
        response = {
            "status_code": record.status_code,
            "request_id": request_id,
            "body": _body(record.payload),
        }
        doc = {"id": ident, "custom_id": custom_id, "response": response, "error": None}
        return OutputLine(_encoded(doc), ok=200 <= record.status_code < 300)
    code = record.error_code
    if code == ErrorCode.CANCELLED:
        return cancelled_line(ident, custom_id)
    if code == ErrorCode.DEADLINE_EXCEEDED:
        return expired_line(ident, custom_id)
    message = record.error_message or str(_body(record.payload))
    return _error_line(ident, custom_id, code.lower() or "error", message)


def expired_line(ident: str, custom_id: str) -> OutputLine:
    return _error_line(ident, custom_id, EXPIRED_CODE, _EXPIRED_MESSAGE, "expired")


def cancelled_line(ident: str, custom_id: str) -> OutputLine:
    return _error_line(ident, custom_id, CANCELLED_CODE, _CANCELLED_MESSAGE, "cancelled")
