"""OpenAI response bodies and SSE events for the simulator, as bytes (no HTTP library here).

Streaming chunks are pre-split around the token text so the hot path only escapes one word per
event.
"""

from __future__ import annotations

from typing import Any

import orjson

from sluiceway.sim.openai_request import ApiError, Kind

__all__ = ["DONE_EVENT", "ChunkFormat", "error_body", "usage"]


def error_body(err: ApiError) -> bytes:
    """The JSON body OpenAI clients understand (``error.message`` etc.)."""
    payload = {
        "error": {"message": err.message, "type": err.type, "param": err.param, "code": err.status}
    }
    return orjson.dumps(payload)


class ChunkFormat:
    """Byte templates for one request's responses (completion or chat)."""

    def __init__(self, kind: Kind, response_id: str, created: int, model: str) -> None:
        self.kind = kind
        head = {"id": response_id, "object": "", "created": created, "model": model}
        if kind == "chat":
            head["object"] = "chat.completion.chunk"
        else:
            head["object"] = "text_completion"
        self._head = head
        self._prefix = b"data: " + orjson.dumps(head)[:-1] + b',"choices":[{"index":0,'

    def token_event(self, text: str, *, first: bool, finish_reason: str | None) -> bytes:
        """One SSE event carrying one token."""
        escaped = orjson.dumps(text)
        if self.kind == "chat":
            role = b'"role":"assistant",' if first else b""
            body = b'"delta":{' + role + b'"content":' + escaped + b"}"
        else:
            body = b'"text":' + escaped
        reason = b"null" if finish_reason is None else orjson.dumps(finish_reason)
        return self._prefix + body + b',"logprobs":null,"finish_reason":' + reason + b"}]}\n\n"

    def usage_event(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> bytes:
        """The trailing usage chunk (``stream_options.include_usage``)."""
        counts = usage(prompt_tokens, completion_tokens, cached_tokens)
        chunk = {**self._head, "choices": [], "usage": counts}
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def full_response(
        self,
        text: str,
        finish_reason: str | None,
        prompt_tokens: int,
        completion_tokens: int,
        cached_tokens: int,
    ) -> bytes:
        """The non-streaming response body."""
        if self.kind == "chat":
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
            obj = "text_completion"
        body = {
            **self._head,
            "object": obj,
            "choices": [choice],
            "usage": usage(prompt_tokens, completion_tokens, cached_tokens),
        }
        return orjson.dumps(body)


DONE_EVENT = b"data: [DONE]\n\n"


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> dict[str, Any]:
    """OpenAI ``usage``; ``prompt_tokens_details.cached_tokens`` is the prefix-cache hit."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }
