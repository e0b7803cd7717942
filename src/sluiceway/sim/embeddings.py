"""``POST /v1/embeddings`` for the simulator: deterministic vectors from the input (pure; no
HTTP library here).

A vector is the sum of one fixed pseudo-random vector per input token, normalised to length 1
(as vLLM normalises an embedding model's output): the same text always gives the same vector,
and texts that share tokens point the same way, so a client's similarity search behaves. The
answer is vLLM's (and OpenAI's) shape, ``usage`` included; ``encoding_format`` ``base64`` gives
each vector as little-endian float32 bytes in base64. It is answered at once: embeddings are
not scheduled in the engine's batch slots.
"""

from __future__ import annotations

import base64
import functools
import math
import random
import struct
from dataclasses import dataclass
from typing import Any

import orjson

from sluiceway.sim.config import SimConfig
from sluiceway.sim.openai_request import ApiError, parse_body
from sluiceway.sim.tokenizer import chat_prompt, tokenize

__all__ = ["DIMENSIONS", "EmbeddingRequest", "embed", "embedding_body", "parse_embedding_request"]

DIMENSIONS = 64  # a vector's length unless the request asks for another
_MAX_DIMENSIONS = 4096
_FORMATS = ("float", "base64")


@dataclass(frozen=True, slots=True)
class EmbeddingRequest:
    """The token ids of each input, the vector length and the encoding asked for."""

    inputs: tuple[tuple[int, ...], ...]
    dimensions: int
    encoding_format: str


def parse_embedding_request(body: bytes, config: SimConfig) -> EmbeddingRequest | ApiError:
    """Check an embeddings body (``input`` or chat ``messages``) against ``config``."""
    data = parse_body(body, config, model_required=False)
    if isinstance(data, ApiError):
        return data
    inputs = _inputs(data)
    if isinstance(inputs, ApiError):
        return inputs
    for tokens in inputs:
        if len(tokens) > config.max_model_len:
            return ApiError(
                400,
                f"This model's maximum context length is {config.max_model_len} tokens; the "
                f"input has {len(tokens)}.",
                param="input",
            )
    dimensions = data.get("dimensions")
    dimensions = DIMENSIONS if dimensions is None else dimensions
    if type(dimensions) is not int or not 0 < dimensions <= _MAX_DIMENSIONS:
        return ApiError(400, f"'dimensions' must be in [1, {_MAX_DIMENSIONS}]", param="dimensions")
    encoding = data.get("encoding_format") or "float"
    if encoding not in _FORMATS:
        return ApiError(400, "'encoding_format' must be float or base64", param="encoding_format")
    return EmbeddingRequest(inputs, dimensions, encoding)


def _inputs(data: dict[str, Any]) -> tuple[tuple[int, ...], ...] | ApiError:
    """Token ids per input: a string, a list of strings, token ids, or lists of token ids."""
    if "messages" in data and "input" not in data:
        messages = data["messages"]
        if not isinstance(messages, list) or not messages:
            return ApiError(400, "'messages' must be a non-empty list", param="messages")
        if not all(isinstance(m, dict) for m in messages):
            return ApiError(400, "every message must be an object", param="messages")
        return (tuple(tokenize(chat_prompt(messages))),)
    value = data.get("input")
    if isinstance(value, str) or (isinstance(value, list) and _ids(value)):
        value = [value]
    if not isinstance(value, list) or not value:
        return ApiError(
            400, "'input' must be a string, token ids or a non-empty list", param="input"
        )
    out: list[tuple[int, ...]] = []
    for item in value:
        if isinstance(item, str) and item:
            out.append(tuple(tokenize(item)))
        elif isinstance(item, list) and item and _ids(item):
            out.append(tuple(item))
        else:
            return ApiError(400, "an input cannot be empty", param="input")
    return tuple(out)


def _ids(value: list[Any]) -> bool:
    return bool(value) and all(type(t) is int and t >= 0 for t in value)


@functools.lru_cache(maxsize=8192)
def _token_vector(token: int, dimensions: int) -> tuple[float, ...]:
    rng = random.Random(token * 7919 + dimensions)
    return tuple(rng.uniform(-1.0, 1.0) for _ in range(dimensions))


def embed(tokens: tuple[int, ...], dimensions: int) -> list[float]:
    """The unit vector of ``tokens`` (the sum of their fixed vectors, normalised)."""
    total = [0.0] * dimensions
    for token in tokens:
        for i, x in enumerate(_token_vector(token, dimensions)):
            total[i] += x
    norm = math.sqrt(sum(x * x for x in total)) or 1.0
    return [x / norm for x in total]


def _encoded(vector: list[float], encoding: str) -> list[float] | str:
    if encoding == "float":
        return vector
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


def embedding_body(request: EmbeddingRequest, response_id: str, created: int, model: str) -> bytes:
    """The answer: one ``embedding`` object per input, then ``usage`` (input tokens only)."""
    data = [
        {
            "index": index,
            "object": "embedding",
            "embedding": _encoded(embed(tokens, request.dimensions), request.encoding_format),
        }
        for index, tokens in enumerate(request.inputs)
    ]
    tokens = sum(len(t) for t in request.inputs)
    return orjson.dumps(
        {
            "id": response_id,
            "object": "list",
            "created": created,
            "model": model,
            "data": data,
            "usage": {
                "prompt_tokens": tokens,
                "total_tokens": tokens,
                "completion_tokens": 0,
                "prompt_tokens_details": None,
            },
        }
    )
