"""HTTP answers the router makes itself: drops, evictions and errors (OpenAI error envelope).

Flow-control outcomes map to a status and the ``x-llm-d-request-dropped-reason`` header as the
current llm-d router does. The eviction answer keeps upstream's literal body; every other body
is ``{"error": {"message", "type", "code"}}``.
"""

from __future__ import annotations

import orjson

from sluiceway.flowcontrol.base import Finalized
from sluiceway.router.sse import EVICTED_MESSAGE
from sluiceway.wire import headers as h
from sluiceway.wire.answer import Answer

__all__ = ["error_answer", "evicted_answer", "finalized_answer", "shutting_down"]

_TEXT = "text/plain; charset=utf-8"
_TYPES = {
    400: "BadRequestError",
    404: "NotFoundError",
    429: "RateLimitError",
    500: "InternalServerError",
    502: "BadGatewayError",
    503: "ServiceUnavailableError",
}
_MESSAGES = {
    h.REASON_SATURATED: "flow control queue is at capacity",
    h.REASON_TTL_EXPIRED: "request timed out in the flow control queue",
    h.REASON_NO_ENDPOINTS: "no model server endpoints available",
    h.REASON_CONTEXT_CANCELLED: "client disconnected while queued",
    h.REASON_SHUTTING_DOWN: "the router is shutting down",
}


def error_answer(status: int, message: str, reason: str | None = None) -> Answer:
    """An OpenAI error envelope, with the dropped-reason header when ``reason`` is given."""
    body = orjson.dumps(
        {"error": {"message": message, "type": _TYPES.get(status, "APIError"), "code": status}}
    )
    answer = Answer(status, body)
    return answer if reason is None else answer.with_headers((h.DROPPED_REASON, reason))


def finalized_answer(done: Finalized) -> Answer:
    """The answer for a request flow control did not dispatch."""
    http = done.http()
    if http is None:  # pragma: no cover - dispatched requests are proxied, not answered here
        raise ValueError("a dispatched request has no drop answer")
    reason = None if http.reason is None else str(http.reason)
    message = _MESSAGES.get(reason or "", f"flow control outcome {done.outcome.value}")
    return error_answer(http.status, message, reason)


def evicted_answer() -> Answer:
    """429 with upstream's literal body and the ``evicted`` reason."""
    headers = (("content-type", _TEXT), (h.DROPPED_REASON, h.REASON_EVICTED))
    return Answer(429, EVICTED_MESSAGE.encode(), headers)


def shutting_down() -> Answer:
    return error_answer(503, _MESSAGES[h.REASON_SHUTTING_DOWN], h.REASON_SHUTTING_DOWN)
