"""Server-sent events passed through as they arrive, with the ``usage`` chunk captured.

Upstream bytes are forwarded up to the last complete event (``\\n\\n``); the rest waits for
the next read. Any event carrying a ``usage`` object is parsed for the token counts (the
Responses API's ``input_tokens`` / ``output_tokens``, in its ``response.completed`` event, too).
When the router itself asked for usage (the client did not), the usage-only event
(``choices: []``) is dropped so the client sees the stream it asked for.

A complete stream ends with a terminal event: ``data: [DONE]`` or an error event
(``data: {"error": ...}``); a Responses stream, which has no ``[DONE]``, with its named last
event (``event: response.completed``, ``response.incomplete``, ``response.failed`` or
``error``). :attr:`SseRelay.ended` says whether one came. A stream that stops without one was
cut (the model server died or closed the connection early).
"""

from __future__ import annotations

import orjson

from sluiceway.flowcontrol.base import Usage

__all__ = ["SseRelay", "usage_from_body"]

_BOUNDARY = b"\n\n"
_USAGE_MARK = b'"usage":{'
_DATA = b"data:"
_DONE = b"[DONE]"
_ERROR = b'{"error"'
_EVENT = b"event:"
# The events a Responses API stream ends with (it sends no [DONE]).
_LAST_EVENTS = frozenset(
    {b"response.completed", b"response.incomplete", b"response.failed", b"error"}
)


def _usage_of(obj: object) -> Usage | None:
    """The usage of a response body or event: chat/completions names, or the Responses API's
    (``input_tokens`` / ``output_tokens``, inside ``response`` in its stream events)."""
    if not isinstance(obj, dict):
        return None
    usage = obj.get("usage")
    if usage is None and isinstance(obj.get("response"), dict):
        usage = obj["response"].get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens", usage.get("input_tokens", 0))
    completion = usage.get("completion_tokens", usage.get("output_tokens", 0))
    try:
        return Usage(int(prompt or 0), int(completion or 0))
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


def _terminal(events: bytes) -> bool:
    """Whether ``events`` hold ``data: [DONE]``, an error event, or a Responses stream's last
    event."""
    for line in events.split(b"\n"):
        if line.startswith(_DATA):
            data = line[len(_DATA) :].strip()
            if data == _DONE or data.startswith(_ERROR):
                return True
        elif line.startswith(_EVENT) and line[len(_EVENT) :].strip() in _LAST_EVENTS:
            return True
    return False


class SseRelay:
    """Feeds on upstream chunks and returns the bytes to forward now; ``ended``: the terminal
    event went by."""

    __slots__ = ("_carry", "ended", "strip_usage", "usage")

    def __init__(self, *, strip_usage: bool) -> None:
        self.strip_usage = strip_usage
        self.usage: Usage | None = None
        self.ended = False
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
        self._watch_end(out)
        return out

    def flush(self) -> bytes:
        """Whatever is held back at the end of the stream (an unterminated last event)."""
        out, self._carry = self._carry, b""
        self._watch_end(out)
        return out

    def _watch_end(self, out: bytes) -> None:
        if not self.ended and (_DONE in out or _ERROR in out or _EVENT in out):
            self.ended = _terminal(out)

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
