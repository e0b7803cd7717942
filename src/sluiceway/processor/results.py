"""Every result record the processor writes is built here (pure).

Paths that end a request (ingest settling an entry, the worker after its gates or its attempt)
call these builders, so one kind of result has one spelling: an HTTP answer, ``CANCELLED``,
``DEADLINE_EXCEEDED`` (or the last answer), ``GATE_DROPPED``, ``GATE_ERROR``,
``INFERENCE_ERROR`` and the error of an entry that cannot run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sluiceway.gates.base import Decision
from sluiceway.wire import DEFAULT_MESSAGES, EntryError, ErrorCode, ResultRecord
from sluiceway.wire.headers import REASON_INFEASIBLE

__all__ = [
    "HttpAnswer",
    "cancelled_result",
    "deadline_result",
    "dropped_result",
    "gate_error_result",
    "http_result",
    "infeasible_result",
    "inference_error_result",
    "invalid_entry_result",
]


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """An HTTP answer kept for the last-answer rule: status and body text."""

    status: int
    body: str


def http_result(request_id: str, token: str, answer: HttpAnswer) -> ResultRecord:
    """The model server's answer, passed on as the result (any status)."""
    return ResultRecord.ok(request_id, answer.status, answer.body, request_token=token)


def cancelled_result(request_id: str, token: str) -> ResultRecord:
    """``CANCELLED``: the producer cancelled the request before it was answered."""
    return ResultRecord.error(request_id, ErrorCode.CANCELLED, request_token=token)


def deadline_result(
    request_id: str, token: str, last: HttpAnswer | None, message: str | None = None
) -> ResultRecord:
    """The result of a request its deadline ended: the last HTTP answer it got, if any, else
    ``DEADLINE_EXCEEDED`` (``message`` None: the default text)."""
    if last is not None:
        return http_result(request_id, token, last)
    return ResultRecord.error(request_id, ErrorCode.DEADLINE_EXCEEDED, message, request_token=token)


def infeasible_result(request_id: str, token: str, remaining: float, needed: float) -> ResultRecord:
    """``DEADLINE_EXCEEDED``, reason ``infeasible``: too little time is left for the request
    to finish, so it is answered now instead of started."""
    message = (
        f"{REASON_INFEASIBLE}: {remaining:.1f} s left, requests of this queue take {needed:.1f} s"
    )
    return ResultRecord.error(request_id, ErrorCode.DEADLINE_EXCEEDED, message, request_token=token)


def dropped_result(request_id: str, token: str, decision: Decision) -> ResultRecord:
    """``GATE_DROPPED`` for a gate's DROP, with the gate's message and payload if it gave any."""
    record = ResultRecord.error(
        request_id, ErrorCode.GATE_DROPPED, decision.message or None, request_token=token
    )
    if decision.drop_payload is not None:
        record = dataclasses.replace(record, payload=decision.drop_payload)
    return record


def gate_error_result(request_id: str, token: str, decision: Decision) -> ResultRecord:
    """``GATE_ERROR``: a pool gate could not decide (its store or signal failed)."""
    message = f"{DEFAULT_MESSAGES[ErrorCode.GATE_ERROR]}: {decision.message}"
    return ResultRecord.error(request_id, ErrorCode.GATE_ERROR, message, request_token=token)


def inference_error_result(request_id: str, token: str, detail: str) -> ResultRecord:
    """``INFERENCE_ERROR``: retrying stopped with no HTTP answer to pass on."""
    message = f"{DEFAULT_MESSAGES[ErrorCode.INFERENCE_ERROR]}: {detail}"
    return ResultRecord.error(request_id, ErrorCode.INFERENCE_ERROR, message, request_token=token)


def invalid_entry_result(exc: EntryError) -> ResultRecord:
    """The error result of a readable entry that cannot run (``exc.entry_id`` is set)."""
    assert exc.entry_id is not None  # readable entries carry their id
    return ResultRecord.error(exc.entry_id, exc.code, exc.message, request_token=exc.request_token)
