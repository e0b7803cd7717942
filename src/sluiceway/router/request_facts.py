"""What a request's OpenAI body tells the router, read once (pure; no I/O): the model, whether
it streams, a token estimate for token-fair accounting, the prompt prefix the endpoint picker
matches on, and the body that goes upstream (``stream_options.include_usage`` added when a
client streams without asking for it, so the router sees the usage it accounts by).

A body nested deeper than ``MAX_NESTING`` (64) levels is refused, as the coordinator refuses
it: orjson reads 1024 levels but writes only 254, so a deeper ``messages`` or a streamed body
that the router writes back out would otherwise fail as a server error, not a bad request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from sluiceway.config.documents import MAX_NESTING, nests_deeper

__all__ = ["BadRequest", "RequestFacts", "read_request_facts"]

# A prompt's token count is unknown before the model tokenizes it; ~4 bytes per token is the
# usual rule of thumb for English text, good enough for token-fair accounting estimates.
_BYTES_PER_TOKEN = 4
_DEFAULT_MAX_TOKENS = 16


class BadRequest(ValueError):
    """The body cannot be proxied (not a JSON object, or nested too deep)."""


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """The parts of an OpenAI body the router uses. ``body`` is what goes upstream (with
    ``stream_options.include_usage`` added when the client streams without asking for it)."""

    body: bytes
    model: str
    stream: bool
    strip_usage: bool
    prompt_tokens: int
    max_tokens: int
    prefix: bytes


def read_request_facts(raw: bytes, *, prefix_bytes: int = 256) -> RequestFacts:
    """Parse an OpenAI completion or chat body; BadRequest when it is not a JSON object or
    nests deeper than ``MAX_NESTING``."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"malformed JSON body: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
    if nests_deeper(data, MAX_NESTING):
        raise BadRequest(f"the body is nested deeper than {MAX_NESTING} levels")
    stream = data.get("stream") is True
    body, strip = raw, False
    if stream and not _asks_usage(data):
        options = data.get("stream_options")
        data["stream_options"] = {
            **(options if isinstance(options, dict) else {}),
            "include_usage": True,
        }
        body, strip = orjson.dumps(data), True
    prompt = _prompt_bytes(data)
    return RequestFacts(
        body=body,
        model=str(data.get("model") or ""),
        stream=stream,
        strip_usage=strip,
        prompt_tokens=max(1, len(prompt) // _BYTES_PER_TOKEN),
        max_tokens=_max_tokens(data),
        prefix=prompt[:prefix_bytes],
    )


def _asks_usage(data: dict[str, Any]) -> bool:
    options = data.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _prompt_bytes(data: dict[str, Any]) -> bytes:
    if "messages" in data:
        return orjson.dumps(data["messages"])
    prompt = data.get("prompt")
    if isinstance(prompt, str):
        return prompt.encode()
    return orjson.dumps(prompt) if prompt is not None else b""


def _max_tokens(data: dict[str, Any]) -> int:
    for key in ("max_completion_tokens", "max_tokens"):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return _DEFAULT_MAX_TOKENS
