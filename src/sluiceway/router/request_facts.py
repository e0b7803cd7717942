"""What a request's OpenAI body tells the router, read once (pure; no I/O): the model, whether
it streams, a token estimate for token-fair accounting, the prompt prefix the endpoint picker
matches on, and the body that goes upstream (``stream_options.include_usage`` added when a
client streams a completion without asking for it, so the router sees the usage it accounts by).

Each route reads its cost by a :class:`CostRule`: the fields that hold its input and the fields
that cap its output. A generation route costs its prompt plus its ``max_tokens``; an
embeddings, score, rerank or tokenizer call costs its input only (it generates nothing).

A body nested deeper than ``MAX_NESTING`` (64) levels is refused, as the coordinator refuses
it: orjson reads 1024 levels but writes only 254, so a deeper ``messages`` or a streamed body
that the router writes back out would otherwise fail as a server error, not a bad request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from sluiceway.config.documents import MAX_NESTING, nests_deeper

__all__ = [
    "GENERATION",
    "BadRequest",
    "CostRule",
    "RequestFacts",
    "input_only",
    "read_request_facts",
]

# A prompt's token count is unknown before the model tokenizes it; ~4 bytes per token is the
# usual rule of thumb for English text, good enough for token-fair accounting estimates.
_BYTES_PER_TOKEN = 4
_DEFAULT_MAX_TOKENS = 16


class BadRequest(ValueError):
    """The body cannot be proxied (not a JSON object, or nested too deep)."""


@dataclass(frozen=True, slots=True)
class CostRule:
    """How one route's body is costed. ``inputs``: the fields holding what the model reads (in
    prefix order); ``outputs``: the fields capping what it writes, the first set one wins
    (none: the route writes no tokens); ``default_output``: the cap when none is set;
    ``ask_usage``: a streamed request is made to carry its usage (completions and chat: the
    ``stream_options.include_usage`` the router then strips)."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...] = ()
    default_output: int = 0
    ask_usage: bool = False


# Completions and chat: the prompt or messages, plus max_tokens (16 when unset, as OpenAI).
GENERATION = CostRule(
    ("messages", "prompt"),
    ("max_completion_tokens", "max_tokens"),
    _DEFAULT_MAX_TOKENS,
    ask_usage=True,
)


def input_only(*fields: str) -> CostRule:
    """A route that reads ``fields`` and generates nothing (embeddings, score, tokenize...)."""
    return CostRule(fields)


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


def read_request_facts(
    raw: bytes, rule: CostRule = GENERATION, *, prefix_bytes: int = 256
) -> RequestFacts:
    """Parse an OpenAI body costed by ``rule``; BadRequest when it is not a JSON object or
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
    if stream and rule.ask_usage and not _asks_usage(data):
        options = data.get("stream_options")
        data["stream_options"] = {
            **(options if isinstance(options, dict) else {}),
            "include_usage": True,
        }
        body, strip = orjson.dumps(data), True
    prompt, tokens = _input(data, rule.inputs)
    return RequestFacts(
        body=body,
        model=str(data.get("model") or ""),
        stream=stream,
        strip_usage=strip,
        prompt_tokens=max(1, tokens),
        max_tokens=_max_tokens(data, rule),
        prefix=prompt[:prefix_bytes],
    )


def _asks_usage(data: dict[str, Any]) -> bool:
    options = data.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _input(data: dict[str, Any], fields: tuple[str, ...]) -> tuple[bytes, int]:
    """The input's bytes (for the prefix) and its estimated tokens: a list of token ids counts
    one per id, anything else ~4 bytes per token."""
    parts: list[bytes] = []
    tokens = 0
    for name in fields:
        value = data.get(name)
        if value is None:
            continue
        if isinstance(value, list) and value and all(type(t) is int for t in value):
            tokens += len(value)
            parts.append(orjson.dumps(value))
            continue
        part = value.encode() if isinstance(value, str) else orjson.dumps(value)
        tokens += len(part) // _BYTES_PER_TOKEN
        parts.append(part)
    return b"".join(parts), tokens


def _max_tokens(data: dict[str, Any], rule: CostRule) -> int:
    for key in rule.outputs:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return rule.default_output
