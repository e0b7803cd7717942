"""Where a request's stop strings first appear in its generated text.

Generated text is a pure function of the request (``tokenizer.output_token``), so the token at
which a stop string completes is known when the request arrives: the engine is told to stop
there (finish reason ``stop``), and the response cuts the text where the stop string begins,
as vLLM does by default (the stop string itself is not returned, even split over tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sluiceway.sim.tokenizer import detokenize_one, output_token

__all__ = ["StopCut", "find_stop"]


@dataclass(frozen=True, slots=True)
class StopCut:
    """``tokens``: generate this many, then finish with ``stop``. The text of token ``token``
    keeps its first ``chars`` characters; later tokens render as empty text."""

    tokens: int
    token: int
    chars: int

    def text(self, index: int, text: str) -> str:
        """The visible text of generated token ``index`` whose full text is ``text``."""
        if index < self.token:
            return text
        return text[: self.chars] if index == self.token else ""


def find_stop(salt: int, max_tokens: int, stops: Sequence[str]) -> StopCut | None:
    """The earliest completion of any of ``stops`` within ``max_tokens`` tokens, or None."""
    if not stops:
        return None
    longest = max(len(s) for s in stops)
    starts: list[int] = []  # character offset where each token's text starts
    text = ""
    for index in range(max_tokens):
        starts.append(len(text))
        text += detokenize_one(output_token(salt, index))
        window = text[max(0, starts[index] - longest + 1) :]
        found = [p for p in (window.find(s) for s in stops) if p >= 0]
        if found:
            begin = len(text) - len(window) + min(found)
            return _cut(index + 1, begin, starts)
    return None


def _cut(tokens: int, begin: int, starts: list[int]) -> StopCut:
    token = max(i for i, start in enumerate(starts) if start <= begin)
    return StopCut(tokens, token, begin - starts[token])
