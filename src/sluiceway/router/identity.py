"""What a request asks for, read from its body and headers (pure; no I/O).

The objective comes from ``x-llm-d-inference-objective`` or its older spelling
``x-gateway-inference-objective`` (the newer wins when both arrive); the fairness id likewise,
defaulting to ``default-flow``. ``x-llm-d-inference-ttl`` (a Go duration) may only shorten the
queue budget; ``x-llm-d-slo-ttft-ms`` feeds the SLO ordering policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from sluiceway.config.quantities import parse_duration
from sluiceway.wire import headers as h

__all__ = [
    "BadRequest",
    "Identity",
    "RequestFacts",
    "header_map",
    "read_identity",
    "read_request_facts",
]

# A prompt's token count is unknown before the model tokenizes it; ~4 bytes per token is the
# usual rule of thumb for English text, good enough for token-fair accounting estimates.
_BYTES_PER_TOKEN = 4
_DEFAULT_MAX_TOKENS = 16


class BadRequest(ValueError):
    """The body cannot be proxied (not a JSON object)."""


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


@dataclass(frozen=True, slots=True)
class Identity:
    objective: str | None
    fairness_id: str
    ttl: float | None
    slo_ttft_ms: int | None
    request_id: str | None


def header_map(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Raw ASGI headers as a dict with lower-case names (the last value wins)."""
    return {n.decode("latin-1"): v.decode("latin-1") for n, v in raw}


def read_request_facts(raw: bytes, *, prefix_bytes: int = 256) -> RequestFacts:
    """Parse an OpenAI completion or chat body; BadRequest when it is not a JSON object."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"malformed JSON body: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
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


def read_identity(headers: dict[str, str]) -> Identity:
    """Objective, fairness id, TTL and SLO from lower-case ``headers``."""
    fairness = h.first_of(headers, h.FAIRNESS_ID_ALIASES) or h.DEFAULT_FAIRNESS_ID
    return Identity(
        objective=h.first_of(headers, h.OBJECTIVE_ALIASES) or None,
        fairness_id=fairness,
        ttl=_ttl(headers.get(h.INFERENCE_TTL)),
        slo_ttft_ms=_int(h.first_of(headers, h.SLO_TTFT_MS_ALIASES)),
        request_id=headers.get(h.REQUEST_ID),
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


def _ttl(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None
