"""OpenAI request bodies (completions and chat) parsed and checked as vLLM checks them.

Parsing returns a ``Parsed`` value or an ``ApiError`` value (OpenAI-style 400/404), never
raises for bad input. No HTTP library here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from sluiceway.sim.config import SimConfig
from sluiceway.sim.tokenizer import chat_prompt, content_text, detokenize, tokenize

__all__ = [
    "MAX_LOGPROBS",
    "ApiError",
    "Kind",
    "Parsed",
    "check_model",
    "parse_body",
    "parse_request",
]

Kind = Literal["completion", "chat"]


@dataclass(frozen=True, slots=True)
class ApiError:
    """An OpenAI-style error answer."""

    status: int
    message: str
    type: str = "BadRequestError"
    param: str | None = None


# The most top logprobs a request may ask for (vLLM's default ``--max-logprobs``).
MAX_LOGPROBS = 20


@dataclass(frozen=True, slots=True)
class Parsed:
    """A valid generation request.

    ``logprobs``: how many alternatives per token to report (0 = the chosen token only), or
    None when the request asked for none. ``echo_text``: text to put before the completion
    (the prompt for completions, the last assistant message for chat), empty when not echoed.
    """

    kind: Kind
    prompt: tuple[int, ...]
    max_tokens: int
    stream: bool
    include_usage: bool
    priority: int
    ignore_eos: bool
    stop: tuple[str, ...] = ()
    echo_text: str = ""
    logprobs: int | None = None
    max_tokens_param: int | None = None


def parse_request(body: bytes, kind: Kind, config: SimConfig) -> Parsed | ApiError:
    """Validate a completions or chat body against ``config``."""
    data = parse_body(body, config)
    if isinstance(data, ApiError):
        return data
    prompt = _prompt(data, kind)
    if isinstance(prompt, ApiError):
        return prompt
    return _limits(data, kind, prompt, config)


def parse_body(
    body: bytes, config: SimConfig, *, model_required: bool = True
) -> dict[str, Any] | ApiError:
    """A request body as a JSON object whose model this server serves (:func:`check_model`),
    else the 400 or 404 vLLM gives."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return ApiError(400, f"malformed JSON body: {exc}")
    if not isinstance(data, dict):
        return ApiError(400, "request body must be a JSON object")
    return check_model(data, config, required=model_required) or data


def check_model(
    data: dict[str, Any], config: SimConfig, *, required: bool = True
) -> ApiError | None:
    """404 for a model this server does not serve, as vLLM words it; 400 when ``model`` is
    missing and ``required`` (generation routes; vLLM's embeddings and tokenizer routes take
    the served model when none is named)."""
    model = data.get("model")
    if model is None and not required:
        return None
    if not isinstance(model, str) or not model:
        return ApiError(400, "'model' is required", param="model")
    if model != config.model:
        return ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
    return None


def _prompt(data: dict[str, Any], kind: Kind) -> tuple[int, ...] | ApiError:
    if kind == "chat":
        return _chat_prompt(data.get("messages"))
    prompt = data.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]
    if isinstance(prompt, str) or (
        isinstance(prompt, list) and all(type(t) is int for t in prompt)
    ):
        if not prompt:  # vLLM refuses an empty prompt: there is nothing to condition on
            return ApiError(400, "The prompt cannot be empty.", param="prompt")
        return tuple(tokenize(prompt)) if isinstance(prompt, str) else tuple(prompt)
    return ApiError(400, "'prompt' must be a string or a list of token ids", param="prompt")


def _chat_prompt(messages: Any) -> tuple[int, ...] | ApiError:
    if not isinstance(messages, list) or not messages:
        return ApiError(400, "'messages' must be a non-empty list", param="messages")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return ApiError(400, f"messages[{index}] must be an object", param="messages")
        if not isinstance(message.get("role"), str):
            # vLLM's request model requires a role on every message.
            return ApiError(400, f"messages[{index}].role is required", param="messages")
    return tuple(tokenize(chat_prompt(messages)))


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
    param = data.get("max_completion_tokens") if kind == "chat" else None
    param = param if param is not None else data.get("max_tokens")
    max_tokens = limit - len(prompt) if param is None else param
    if type(max_tokens) is not int or max_tokens <= 0:
        return ApiError(400, "'max_tokens' must be a positive integer", param="max_tokens")
    if len(prompt) + max_tokens > limit:
        return ApiError(
            400,
            f"This model's maximum context length is {limit} tokens; you requested "
            f"{len(prompt) + max_tokens} ({len(prompt)} in the prompt).",
            param="max_tokens",
        )
    options = _options(data, kind, prompt, max_tokens)
    if isinstance(options, Parsed) and param is not None:
        return dataclasses.replace(options, max_tokens_param=max_tokens)
    return options


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
    stop = _stop(data.get("stop"))
    logprobs = _logprobs(data, kind)
    for value in (stop, logprobs):
        if isinstance(value, ApiError):
            return value
    return Parsed(
        kind=kind,
        prompt=prompt,
        max_tokens=max_tokens,
        stream=bool(data.get("stream", False)),
        include_usage=bool(options.get("include_usage", False)),
        priority=priority,
        ignore_eos=bool(data.get("ignore_eos", False)),
        stop=stop,  # type: ignore[arg-type]
        echo_text=_echo_text(data, kind) if data.get("echo") else "",
        logprobs=logprobs,  # type: ignore[arg-type]
    )


def _stop(value: Any) -> tuple[str, ...] | ApiError:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        return ApiError(400, "'stop' must be a string or a list of strings", param="stop")
    return tuple(s for s in value if s)


def _logprobs(data: dict[str, Any], kind: Kind) -> int | ApiError | None:
    """The number of alternatives per token, as vLLM reads ``logprobs``/``top_logprobs``."""
    if kind == "chat":
        wanted, top = data.get("logprobs"), data.get("top_logprobs")
        if wanted not in (None, True, False):
            return ApiError(400, "'logprobs' must be a boolean", param="logprobs")
        if top is not None and not wanted:
            return ApiError(
                400, "when using `top_logprobs`, `logprobs` must be set to true", "BadRequestError",
                "top_logprobs",
            )  # fmt: skip
        count, name = (top if top is not None else 0) if wanted else None, "top_logprobs"
    else:
        count, name = data.get("logprobs"), "logprobs"
    if count is None:
        return None
    if type(count) is not int or not 0 <= count <= MAX_LOGPROBS:
        return ApiError(400, f"'{name}' must be an integer in [0, {MAX_LOGPROBS}]", param=name)
    return count


def _echo_text(data: dict[str, Any], kind: Kind) -> str:
    """What ``echo`` puts before the answer: the prompt, or (chat) a trailing assistant turn."""
    if kind == "completion":
        prompt = data["prompt"]
        prompt = (
            prompt[0] if isinstance(prompt, list) and isinstance(prompt[0], str | list) else prompt
        )
        return prompt if isinstance(prompt, str) else detokenize(prompt)
    last = data["messages"][-1]
    if last.get("role") != "assistant":
        return ""
    return content_text(last.get("content"))
