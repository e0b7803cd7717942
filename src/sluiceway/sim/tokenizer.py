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

__all__ = ["VOCAB_SIZE", "chat_prompt", "detokenize_one", "output_token", "tokenize"]

VOCAB_SIZE: Final = 32_000
_TOKEN_RE: Final = re.compile(r"\w+|[^\w\s]")
_WORD_TEXT: Final = (
    "the of and to in is that for it as with was on be by at this from or an are not have "
    "one all can more will which their has but its time model queue token batch team fair "
    "share pool server request stream priority quota lane window signal metric answer river "
    "sluice water gate flow level bank channel weir lock basin tide current"
)
_WORDS: Final = tuple(_WORD_TEXT.split())


def tokenize(text: str) -> list[int]:
    """Token ids of ``text`` (words and punctuation marks, stable across processes)."""
    return [zlib.crc32(piece.encode()) % VOCAB_SIZE for piece in _TOKEN_RE.findall(text)]


def chat_prompt(messages: Iterable[Mapping[str, Any]]) -> str:
    """One prompt string from chat messages, with a role marker per message."""
    parts: list[str] = []
    for message in messages:
        parts.append(f"<|{message.get('role', 'user')}|>")
        parts.append(_content_text(message.get("content")))
    parts.append("<|assistant|>")
    return "\n".join(parts)


def output_token(salt: int, index: int) -> int:
    """The ``index``-th generated token id of a request whose content hashes to ``salt``."""
    return (salt + index * 7919) % VOCAB_SIZE


def detokenize_one(token_id: int) -> str:
    """The text of one generated token: a leading space and a word."""
    return " " + _WORDS[token_id % len(_WORDS)]


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)
