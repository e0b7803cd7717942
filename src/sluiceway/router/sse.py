"""Server-sent events passed through as they arrive, with the ``usage`` chunk captured.

Upstream bytes are forwarded up to the last complete event (``\\n\\n``); the rest waits for
the next read. Any event carrying a ``usage`` object is parsed for the token counts. When the
router itself asked for usage (the client did not), the usage-only event (``choices: []``) is
dropped so the client sees the stream it asked for.
"""

from __future__ import annotations

import orjson

from sluiceway.flowcontrol.base import Usage

__all__ = ["EVICTED_EVENT", "SseRelay", "usage_from_body"]

_BOUNDARY = b"\n\n"
_USAGE_MARK = b'"usage":{'
_DATA = b"data:"

EVICTED_MESSAGE = "request evicted by flow control"
# The terminal event an evicted stream ends with, instead of ``data: [DONE]``.
EVICTED_EVENT = (
    b"data: "
    + orjson.dumps({"error": {"type": "evicted", "message": EVICTED_MESSAGE, "code": 429}})
    + _BOUNDARY
)


def _usage_of(obj: object) -> Usage | None:
    if not isinstance(obj, dict):
        return None
    usage = obj.get("usage")
    if not isinstance(usage, dict):
        return None
    try:
        return Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
    except (TypeError, ValueError):
        return None


def usage_from_body(body: bytes) -> Usage | None:
    """``usage`` of a non-streamed OpenAI response, if it has one."""
    if _USAGE_MARK not in body:
        return None
    try:
        return _usage_of(orjson.loads(body))
    except orjson.JSONDecodeError:
        return None


class SseRelay:
    """Feeds on upstream chunks and returns the bytes to forward now."""

    __slots__ = ("_carry", "strip_usage", "usage")

    def __init__(self, *, strip_usage: bool) -> None:
        self.strip_usage = strip_usage
        self.usage: Usage | None = None
        self._carry = b""

    def feed(self, data: bytes) -> bytes:
        """Complete events from ``data`` (plus what was held back)."""
        buf = self._carry + data if self._carry else data
        cut = buf.rfind(_BOUNDARY)
        if cut < 0:
            self._carry = buf
            return b""
        out, self._carry = buf[: cut + 2], buf[cut + 2 :]
        if _USAGE_MARK in out:
            out = self._take_usage(out)
        return out

    def flush(self) -> bytes:
        """Whatever is held back at the end of the stream (an unterminated last event)."""
        out, self._carry = self._carry, b""
        return out

    def _take_usage(self, out: bytes) -> bytes:
        kept: list[bytes] = []
        for event in out.split(_BOUNDARY)[:-1]:
            if _USAGE_MARK in event and self._consume(event):
                continue
            kept.append(event + _BOUNDARY)
        return b"".join(kept)

    def _consume(self, event: bytes) -> bool:
        """Record the usage of ``event``; True when the event must be dropped."""
        start = event.find(_DATA)
        if start < 0:
            return False
        try:
            obj = orjson.loads(event[start + len(_DATA) :])
        except orjson.JSONDecodeError:
            return False
        usage = _usage_of(obj)
        if usage is not None:
            self.usage = usage
        return self.strip_usage and isinstance(obj, dict) and obj.get("choices") == []
