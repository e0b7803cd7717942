"""A deterministic stand-in tokenizer: same text, same token ids, in every process and run.

Words (runs of word characters) and single punctuation marks are tokens; whitespace only
separates them and is never part of one. Ids come from a stable hash (CRC-32), never from
Python's randomised ``hash``. Generated text is drawn from a small vocabulary, each token
rendered as a leading space and one word so that one streamed event carries one token.

Why resumes hit the prefix cache (vLLM re-tokenizes what a client sends back):

* Prefix stability. ``tokenize(a + b) == tokenize(a) + tokenize(b)`` whenever the join is not
  inside a word, i.e. unless ``a`` ends and ``b`` starts with a word character. Generated text
  always starts with a space, so a prompt followed by generated text tokenizes as the prompt
  alone followed by the generated tokens.
* Round trip. A generated token's id is the id ``tokenize`` gives its text, so
  ``tokenize(detokenize(ids)) == ids`` for every token the simulator generates.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

__all__ = [
    "VOCAB_SIZE",
    "chat_prompt",
    "content_text",
    "detokenize",
    "detokenize_one",
    "nearby_token",
    "output_salt",
    "output_token",
    "token_texts",
    "tokenize",
    "word_json",
]

T = TypeVar("T")

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
_WORDS: Final = len(_TEXTS)


def tokenize(text: str) -> list[int]:
    """Token ids of ``text`` (words and punctuation marks, stable across processes)."""
    return [zlib.crc32(piece.encode()) % VOCAB_SIZE for piece in _TOKEN_RE.findall(text)]


def token_texts(text: str) -> list[str]:
    """The text of each of ``text``'s tokens, in the order ``tokenize`` gives their ids."""
    return _TOKEN_RE.findall(text)


# The id each vocabulary word tokenizes to (distinct: tests/unit/sim/test_tokenizer.py checks).
_WORD_IDS: Final = tuple(tokenize(text)[0] for text in _TEXTS)


def _by_id(values: Sequence[T]) -> tuple[T, ...]:
    """A table over all ids: a vocabulary word's ``values`` entry at its own id; any other id
    ``i`` (a client's token-id prompt) gets entry ``i mod len(values)``."""
    table = [*values] * -(-VOCAB_SIZE // len(values))  # entry i is values[i % len(values)]
    del table[VOCAB_SIZE:]
    for index, token_id in enumerate(_WORD_IDS):
        table[token_id] = values[index]
    return tuple(table)


_TEXT_OF: Final = _by_id(_TEXTS)
_JSON_OF: Final = _by_id(_JSON)
_INDEX_OF: Final = _by_id(range(_WORDS))


def chat_prompt(messages: Iterable[Mapping[str, Any]]) -> str:
    """One prompt string from chat messages, with a role marker per message.

    The text ends with the assistant marker, so (in tokens) the prompt followed by its generated
    text is a prefix of the prompt of the same messages plus that text as an assistant message.
    """
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
    """The ``index``-th generated token id of a request whose content hashes to ``salt``: the id
    its word tokenizes to, so the text fed back in a prompt maps to the same ids."""
    return _WORD_IDS[(salt + index * 7919) % VOCAB_SIZE % _WORDS]


def nearby_token(token_id: int, step: int) -> int:
    """The generated token ``step`` words after ``token_id``'s word in the vocabulary (distinct
    from it for ``0 < step < len(vocabulary)``): cheap stand-in alternatives for logprobs."""
    return _WORD_IDS[(_INDEX_OF[token_id % VOCAB_SIZE] + step) % _WORDS]


def detokenize_one(token_id: int) -> str:
    """The text of one token: a leading space and a word (the generated word for its own id)."""
    return _TEXT_OF[token_id % VOCAB_SIZE]


def detokenize(token_ids: Iterable[int]) -> str:
    """The text of ``token_ids``; ``tokenize`` gives the ids back for generated tokens."""
    return "".join(map(detokenize_one, token_ids))


def word_json(token_id: int) -> bytes:
    """``detokenize_one(token_id)`` as a JSON string literal (precomputed: the hot path)."""
    return _JSON_OF[token_id % VOCAB_SIZE]


def content_text(content: Any) -> str:
    """The text of a chat message's ``content`` (a string or OpenAI content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)
