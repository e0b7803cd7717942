"""What the coordinator answers: client errors and stored results as HTTP (pure).

A stored result that carries an HTTP answer is mirrored (status and body). One that records a
failure without an HTTP answer maps by its error code: ``GATE_DROPPED`` 429,
``DEADLINE_EXCEEDED`` 504, ``INVALID_REQUEST`` 400, ``CANCELLED`` 499, anything else 502; a stored
status outside 100-599 is 502 ``MALFORMED_RESULT``. Errors use the OpenAI envelope.
"""

from __future__ import annotations

import json
from typing import Final

from sluiceway.errors import WireError
from sluiceway.wire import ErrorCode, ResultRecord, decode_result
from sluiceway.wire.answer import Answer
from sluiceway.wire.api_errors import error_body

__all__ = [
    "RequestRejected",
    "answer_for_record",
    "oversized_body",
    "pending_answer",
    "rejected_answer",
]

CLIENT_CLOSED: Final = 499

_STATUS_OF_CODE: Final[dict[str, int]] = {
    ErrorCode.GATE_DROPPED: 429,
    ErrorCode.DEADLINE_EXCEEDED: 504,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.CANCELLED: CLIENT_CLOSED,
}


class RequestRejected(Exception):
    """A request the coordinator answers itself with an error (validation, identity, lookups)."""

    def __init__(self, status: int, code: str, message: str, *, type: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.type = type or _type_for(status)


def _type_for(status: int) -> str:
    if status == 401:
        return "authentication_error"
    if status == 404:
        return "not_found_error"
    if status == 429:
        return "rate_limit_error"
    return "invalid_request_error" if status < 500 else "server_error"


def oversized_body(limit: int) -> RequestRejected:
    return RequestRejected(413, "oversized_body", f"request body over {limit} bytes")


def rejected_answer(exc: RequestRejected) -> Answer:
    return Answer(exc.status, error_body(str(exc), type=exc.type, code=exc.code))


def pending_answer(request_id: str) -> Answer:
    """``202 {"id", "status": "pending"}`` with the id echoed in ``x-request-id``."""
    body = json.dumps({"id": request_id, "status": "pending"}).encode()
    return Answer(202, body).with_headers(("x-request-id", request_id))


def is_cancelled_tombstone(raw: str) -> bool:
    """Whether a stored result is the CANCELLED record a cancellation leaves behind."""
    try:
        return decode_result(raw).error_code == ErrorCode.CANCELLED
    except WireError:
        return False


def answer_for_record(raw: str) -> Answer:
    """The HTTP answer a stored result record stands for."""
    try:
        record = decode_result(raw)
    except WireError as exc:
        return _error(502, "MALFORMED_RESULT", f"stored result is unreadable: {exc}")
    if record.is_http:
        if not 100 <= record.status_code <= 599:
            return _error(502, "MALFORMED_RESULT", f"stored status {record.status_code}")
        return Answer(record.status_code, record.payload.encode())
    return _failure(record)


def _failure(record: ResultRecord) -> Answer:
    status = _STATUS_OF_CODE.get(record.error_code, 502)
    code = record.error_code or "INFERENCE_ERROR"
    return _error(status, code, record.error_message or code.lower())


def _error(status: int, code: str, message: str) -> Answer:
    return Answer(status, error_body(message, type=_type_for(status), code=code))
