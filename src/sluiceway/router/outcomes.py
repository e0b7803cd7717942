"""HTTP answers the router makes itself: drops, evictions and errors (OpenAI error envelope).

Flow-control outcomes map to a status and the ``x-llm-d-request-dropped-reason`` header as the
current llm-d router does. The eviction answer keeps upstream's literal body (the llm-d router's
``ImmediateResponse``: 429, text ``request evicted by flow control``; clients and llm-d-async
match on the status and reason, the official ``openai`` client raises ``RateLimitError`` for any
429 body); every other body is ``{"error": {"message", "type", "code"}}``, and a stream the
router must end early ends with that envelope as its last SSE event: the ``openai`` client
raises ``APIError`` from it with the envelope's ``type`` and ``code`` (``RateLimitError`` /
``evicted`` for an eviction, which upstream has no mid-stream form of). Messages never name a
model server: its address is logged, not told to clients.
"""

from __future__ import annotations

import orjson

from sluiceway.flowcontrol.base import Finalized
from sluiceway.wire import headers as h
from sluiceway.wire.answer import Answer
from sluiceway.wire.api_errors import error_document

__all__ = [
    "EVICTED_EVENT",
    "EVICTED_MESSAGE",
    "UPSTREAM_CUT_EVENT",
    "UPSTREAM_FAILED",
    "body_too_large",
    "error_answer",
    "evicted_answer",
    "finalized_answer",
    "headers_too_large",
    "method_not_allowed",
    "model_not_found",
    "shutting_down",
    "unauthorized",
    "upstream_failed",
]

_TEXT = "text/plain; charset=utf-8"
_TYPES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    404: "NotFoundError",
    405: "MethodNotAllowedError",
    413: "RequestTooLargeError",
    429: "RateLimitError",
    431: "RequestHeaderFieldsTooLargeError",
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
UPSTREAM_FAILED = "the model server failed to answer"
_UPSTREAM_CUT = "the model server ended the stream before it was complete"
EVICTED_MESSAGE = "request evicted by flow control"


def _envelope(status: int, message: str, code: str | int | None = None) -> bytes:
    kind = _TYPES.get(status, "APIError")
    return orjson.dumps(error_document(message, type=kind, code=status if code is None else code))


# The terminal event of a stream whose model server stopped mid-way (instead of ``[DONE]``).
UPSTREAM_CUT_EVENT = b"data: " + _envelope(502, _UPSTREAM_CUT) + b"\n\n"
# The terminal event of a stream evicted once streaming: a rate-limit error whose code names
# the eviction (``err.type == "RateLimitError"``, ``err.code == "evicted"`` in the SDK).
EVICTED_EVENT = b"data: " + _envelope(429, EVICTED_MESSAGE, h.REASON_EVICTED) + b"\n\n"


def error_answer(status: int, message: str, reason: str | None = None) -> Answer:
    """An OpenAI error envelope, with the dropped-reason header when ``reason`` is given."""
    answer = Answer(status, _envelope(status, message))
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


def ttl_expired() -> Answer:
    """429 ``rejected-ttl-expired``: its queue budget ran out before it could go upstream."""
    return error_answer(429, _MESSAGES[h.REASON_TTL_EXPIRED], h.REASON_TTL_EXPIRED)


def shutting_down() -> Answer:
    return error_answer(503, _MESSAGES[h.REASON_SHUTTING_DOWN], h.REASON_SHUTTING_DOWN)


def upstream_failed() -> Answer:
    """502 for a model server that failed before the response started (address not told)."""
    return error_answer(502, UPSTREAM_FAILED)


def unauthorized() -> Answer:
    """401, as the coordinator answers a missing or unknown API key."""
    return error_answer(401, "missing or unknown API key")


def model_not_found(model: str) -> Answer:
    """404 for a model no endpoint serves, worded as vLLM words it (with ``param``)."""
    doc = error_document(f"The model `{model}` does not exist.", type="NotFoundError", code=404)
    doc["error"]["param"] = "model"
    return Answer(404, orjson.dumps(doc))


def method_not_allowed(method: str, path: str, allowed: tuple[str, ...]) -> Answer:
    """405 with the ``Allow`` header the route takes."""
    answer = error_answer(405, f"{method} is not allowed on {path}")
    return answer.with_headers(("allow", ", ".join(allowed)))


def body_too_large(limit: int) -> Answer:
    return error_answer(413, f"request body over {limit} bytes")


def headers_too_large(problem: str) -> Answer:
    return error_answer(431, problem)
