"""OpenAI request parsing and response shapes for the simulator (no HTTP library here).

Parsing returns a ``Parsed`` value or an ``ApiError`` value (OpenAI-style 400/404), never
raises for bad input. Streaming chunks are pre-split around the token text so the hot path
only escapes one word per event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson

from sluiceway.sim.config import SimConfig
from sluiceway.sim.tokenizer import chat_prompt, tokenize

__all__ = ["ApiError", "ChunkFormat", "Parsed", "error_body", "parse_request"]

Kind = Literal["completion", "chat"]


@dataclass(frozen=True, slots=True)
class ApiError:
    """An OpenAI-style error answer."""

    status: int
    message: str
    type: str = "BadRequestError"
    param: str | None = None


@dataclass(frozen=True, slots=True)
class Parsed:
    """A valid generation request."""

    kind: Kind
    prompt: tuple[int, ...]
    max_tokens: int
    stream: bool
    include_usage: bool
    priority: int
    ignore_eos: bool


def error_body(err: ApiError) -> bytes:
    """The JSON body OpenAI clients understand (``error.message`` etc.)."""
    payload = {
        "error": {"message": err.message, "type": err.type, "param": err.param, "code": err.status}
    }
    return orjson.dumps(payload)


def parse_request(body: bytes, kind: Kind, config: SimConfig) -> Parsed | ApiError:
    """Validate a completions or chat body against ``config``."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return ApiError(400, f"malformed JSON body: {exc}")
    if not isinstance(data, dict):
        return ApiError(400, "request body must be a JSON object")
    model_error = _check_model(data, config)
    if model_error is not None:
        return model_error
    prompt = _prompt(data, kind)
    if isinstance(prompt, ApiError):
        return prompt
    return _limits(data, kind, prompt, config)


def _check_model(data: dict[str, Any], config: SimConfig) -> ApiError | None:
    model = data.get("model")
    if not isinstance(model, str) or not model:
        return ApiError(400, "'model' is required", param="model")
    if model != config.model:
        return ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
    return None


def _prompt(data: dict[str, Any], kind: Kind) -> tuple[int, ...] | ApiError:
    if kind == "chat":
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            return ApiError(400, "'messages' must be a non-empty list", param="messages")
        if not all(isinstance(m, dict) for m in messages):
            return ApiError(400, "each message must be an object", param="messages")
        return tuple(tokenize(chat_prompt(messages)))
    prompt = data.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]
    if isinstance(prompt, str):
        return tuple(tokenize(prompt))
    if isinstance(prompt, list) and all(type(t) is int for t in prompt):
        return tuple(prompt)
    return ApiError(400, "'prompt' must be a string or a list of token ids", param="prompt")


def _limits(
    data: dict[str, Any], kind: Kind, prompt: tuple[int, ...], config: SimConfig
) -> Parsed | ApiError:
    limit = config.max_model_len
    if len(prompt) >= limit:
        return ApiError(
            400,
            f"This model's maximum context length is {limit} tokens; the prompt has {len(prompt)}.",
            param="prompt",
        )
    max_tokens = data.get("max_completion_tokens") if kind == "chat" else None
    max_tokens = max_tokens if max_tokens is not None else data.get("max_tokens")
    if max_tokens is None:
        max_tokens = limit - len(prompt)
    if type(max_tokens) is not int or max_tokens <= 0:
        return ApiError(400, "'max_tokens' must be a positive integer", param="max_tokens")
    if len(prompt) + max_tokens > limit:
        return ApiError(
            400,
            f"This model's maximum context length is {limit} tokens; you requested "
            f"{len(prompt) + max_tokens} ({len(prompt)} in the prompt).",
            param="max_tokens",
        )
    return _options(data, kind, prompt, max_tokens)


def _options(
    data: dict[str, Any], kind: Kind, prompt: tuple[int, ...], max_tokens: int
) -> Parsed | ApiError:
    n = data.get("n", 1)
    if n not in (1, None):
        return ApiError(400, "only n=1 is simulated", param="n")
    priority = data.get("priority", 0)
    if type(priority) is not int:
        return ApiError(400, "'priority' must be an integer", param="priority")
    options = data.get("stream_options") or {}
    if not isinstance(options, dict):
        return ApiError(400, "'stream_options' must be an object", param="stream_options")
    return Parsed(
        kind=kind,
        prompt=prompt,
        max_tokens=max_tokens,
        stream=bool(data.get("stream", False)),
        include_usage=bool(options.get("include_usage", False)),
        priority=priority,
        ignore_eos=bool(data.get("ignore_eos", False)),
    )


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
