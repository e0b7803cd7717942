"""A deterministic stand-in tokenizer: same text, same token ids, in every process and run.

Words and punctuation marks are tokens; ids come from a stable hash (CRC-32), never from
Python's randomised ``hash``. Generated text is drawn from a small vocabulary, each token
rendered as one word so that one streamed event carries one token.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "VOCAB_SIZE",
    "chat_prompt",
    "content_text",
    "detokenize_one",
    "output_salt",
    "output_token",
    "tokenize",
    "word_json",
]

VOCAB_SIZE: Final = 32_000
_TOKEN_RE: Final = re.compile(r"\w+|[^\w\s]")
_WORD_TEXT: Final = (
    "the of and to in is that for it as with was on be by at this from or an are not have "
    "one all can more will which their has but its time model queue token batch team fair "
    "share pool server request stream priority quota lane window signal metric answer river "
    "sluice water gate flow level bank channel weir lock basin tide current"
)
_TEXTS: Final = tuple(" " + word for word in _WORD_TEXT.split())
_JSON: Final = tuple(b'"' + text.encode() + b'"' for text in _TEXTS)  # plain words: no escapes


def tokenize(text: str) -> list[int]:
    """Token ids of ``text`` (words and punctuation marks, stable across processes)."""
    return [zlib.crc32(piece.encode()) % VOCAB_SIZE for piece in _TOKEN_RE.findall(text)]


def chat_prompt(messages: Iterable[Mapping[str, Any]]) -> str:
    """One prompt string from chat messages, with a role marker per message."""
    parts: list[str] = []
    for message in messages:
        parts.append(f"<|{message.get('role', 'user')}|>")
        parts.append(content_text(message.get("content")))
    parts.append("<|assistant|>")
    return "\n".join(parts)


def output_salt(seed: int, prompt: tuple[int, ...]) -> int:
    """What a request's generated text depends on: the server's seed and the prompt's tokens."""
    return hash((seed, prompt)) & 0x7FFFFFFF


def output_token(salt: int, index: int) -> int:
    """The ``index``-th generated token id of a request whose content hashes to ``salt``."""
    return (salt + index * 7919) % VOCAB_SIZE


def detokenize_one(token_id: int) -> str:
    """The text of one generated token: a leading space and a word."""
    return _TEXTS[token_id % len(_TEXTS)]


def word_json(token_id: int) -> bytes:
    """``detokenize_one(token_id)`` as a JSON string literal (precomputed: the hot path)."""
    return _JSON[token_id % len(_JSON)]


def content_text(content: Any) -> str:
    """The text of a chat message's ``content`` (a string or OpenAI content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)
