"""``POST /tokenize`` and ``POST /detokenize`` for the simulator, in vLLM's shapes, with the
simulator's own tokenizer (pure; no HTTP library here).

``/tokenize`` takes a ``prompt`` (or chat ``messages``, rendered as a generation request's
prompt is) and answers ``count``, ``max_model_len``, ``tokens`` and, with
``return_token_strs``, ``token_strs``; ``/detokenize`` takes ``tokens`` and answers ``prompt``.
The tokenizer has no special tokens, so ``add_special_tokens`` changes nothing.
"""

from __future__ import annotations

from typing import Any

import orjson

from sluiceway.sim.config import SimConfig
from sluiceway.sim.openai_request import ApiError, parse_body
from sluiceway.sim.tokenizer import VOCAB_SIZE, chat_prompt, detokenize, token_texts, tokenize

__all__ = ["detokenize_body", "tokenize_body"]


def tokenize_body(body: bytes, config: SimConfig) -> bytes | ApiError:
    """The answer to ``POST /tokenize``."""
    data = parse_body(body, config, model_required=False)
    if isinstance(data, ApiError):
        return data
    if "messages" in data:
        messages = data["messages"]
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return ApiError(400, "'messages' must be a list of objects", param="messages")
        text = chat_prompt(messages)
    elif isinstance(data.get("prompt"), str):
        text = data["prompt"]
    else:
        return ApiError(400, "'prompt' must be a string (or give 'messages')", param="prompt")
    tokens = tokenize(text)
    answer: dict[str, Any] = {
        "count": len(tokens),
        "max_model_len": config.max_model_len,
        "tokens": tokens,
        "token_strs": token_texts(text) if data.get("return_token_strs") else None,
    }
    return orjson.dumps(answer)


def detokenize_body(body: bytes, config: SimConfig) -> bytes | ApiError:
    """The answer to ``POST /detokenize``."""
    data = parse_body(body, config, model_required=False)
    if isinstance(data, ApiError):
        return data
    tokens = data.get("tokens")
    if not isinstance(tokens, list) or not all(
        type(t) is int and 0 <= t < VOCAB_SIZE for t in tokens
    ):
        return ApiError(
            400, f"'tokens' must be a list of token ids in [0, {VOCAB_SIZE})", param="tokens"
        )
    return orjson.dumps({"prompt": detokenize(tokens)})
