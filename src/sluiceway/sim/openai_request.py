"""OpenAI request bodies (completions and chat) parsed and checked as vLLM checks them.

Parsing returns a ``Parsed`` value or an ``ApiError`` value (OpenAI-style 400/404), never
raises for bad input. No HTTP library here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson

from sluiceway.sim.config import SimConfig
from sluiceway.sim.tokenizer import chat_prompt, tokenize

__all__ = ["ApiError", "Kind", "Parsed", "parse_request"]

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
