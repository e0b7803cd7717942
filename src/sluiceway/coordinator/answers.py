"""What the coordinator answers: client errors and stored results as HTTP (pure).

A stored result that carries an HTTP answer is mirrored (status and body). One that records a
failure without an HTTP answer maps by its error code: ``GATE_DROPPED`` 429,
``DEADLINE_EXCEEDED`` 504, ``INVALID_REQUEST`` 400, ``CANCELLED`` 409, anything else 502; a stored
status outside 100-599 is 502 ``MALFORMED_RESULT``. Errors use the OpenAI envelope. A broker
that still fails after the mailboxes' retries is 503 with ``Retry-After``: the request is not
lost, the client asks again (by id, or re-attaching with the same ``x-request-id``).

``CANCELLED`` is 409 Conflict, not nginx's 499: the request exists (410 would say it does not)
but its state, cancelled, conflicts with asking for its result. The official ``openai`` client
maps 409 to ``ConflictError`` (499 is a bare ``APIStatusError``); it would retry a 409, so the
answer says ``x-should-retry: false``, as nothing changes on asking again.

The broker's 503 carries a fixed ``Retry-After: 1``, not the router's estimate: there is no
queue to measure, a blip is over in a second or two, and 1 s is already the floor the router's
jitter cannot go below in whole seconds (and far under its 60 s cap).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

from sluiceway.errors import BrokerError, WireError
from sluiceway.wire import ErrorCode, ResultRecord, decode_result
from sluiceway.wire.answer import Answer
from sluiceway.wire.api_errors import error_body
from sluiceway.wire.headers import DROPPED_REASON, REASON_INFEASIBLE, SHOULD_RETRY

__all__ = [
    "RETRY_AFTER_SECONDS",
    "RequestRejected",
    "answer_for_record",
    "broker_unavailable",
    "disallowed_method",
    "oversized_body",
    "pending_answer",
    "rejected_answer",
    "unknown_request",
]

CONFLICT: Final = 409
RETRY_AFTER_SECONDS: Final = 1  # a broker blip is over in a second or two

_STATUS_OF_CODE: Final[dict[str, int]] = {
    ErrorCode.GATE_DROPPED: 429,
    ErrorCode.DEADLINE_EXCEEDED: 504,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.CANCELLED: CONFLICT,
}


class RequestRejected(Exception):
    """A request the coordinator answers itself with an error (validation, identity, lookups)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        type: str = "",
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.type = type or _type_for(status)
        self.headers = headers


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


def disallowed_method(method: str, path: str, allowed: Iterable[str]) -> RequestRejected:
    """405 with the ``Allow`` header of the methods ``path`` takes."""
    allow = ", ".join(allowed)
    return RequestRejected(
        405, "method_not_allowed", f"{method} is not allowed on {path}", headers=(("allow", allow),)
    )


def broker_unavailable(code: str, exc: BrokerError) -> RequestRejected:
    """503 with ``Retry-After`` for a broker that failed past the retries."""
    return RequestRejected(
        503,
        code,
        f"the broker is unavailable, try again: {exc}",
        headers=(("retry-after", str(RETRY_AFTER_SECONDS)),),
    )


def unknown_request(request_id: str) -> RequestRejected:
    """410 for an id the tenant does not have (unknown, expired, deleted, another's)."""
    return RequestRejected(410, "UNKNOWN_REQUEST", f"request {request_id} is unknown or gone")


def rejected_answer(exc: RequestRejected) -> Answer:
    body = error_body(str(exc), type=exc.type, code=exc.code)
    return Answer(exc.status, body).with_headers(*exc.headers)


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
    answer = _error(status, code, record.error_message or code.lower())
    if status == CONFLICT:  # cancelled: asking again changes nothing
        return answer.with_headers((SHOULD_RETRY, "false"))
    if record.error_message.startswith(f"{REASON_INFEASIBLE}:"):  # answered at once, on purpose
        return answer.with_headers((DROPPED_REASON, REASON_INFEASIBLE))
    return answer


def _error(status: int, code: str, message: str) -> Answer:
    return Answer(status, error_body(message, type=_type_for(status), code=code))
