"""Generated work thrown away (pure): tokens of evicted attempts that nobody received, and
prompt tokens a resumed attempt had to recompute because they missed the prefix cache.

Per request: when the client got an answer of T tokens, the waste is every attempt's
generated tokens minus T (a resumed completion keeps its earlier tokens, so it wastes none of
them); when it did not (abandoned, or cut at the end of a stage), every attempt but the last
was evicted work. A later attempt whose prompt grew (prompt + generated text) adds the part of
that growth it could not take from the cache.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["ModelAttempt", "Waste", "wasted_tokens"]


@dataclass
class ModelAttempt:
    """One model attempt of one request."""

    request_id: str
    started: float
    prompt_tokens: int
    cached_tokens: int
    max_tokens: int
    generated: int = 0


@dataclass(frozen=True)
class Waste:
    """Generated tokens, decode tokens lost to evictions, prompt tokens recomputed on resume
    that missed the prefix cache."""

    generated: int = 0
    lost: int = 0
    recomputed: int = 0

    @property
    def wasted(self) -> int:
        return self.lost + self.recomputed


def wasted_tokens(attempts: Iterable[ModelAttempt], delivered: Mapping[str, int]) -> Waste:
    """The waste of ``attempts``; ``delivered`` maps request id -> tokens the client got."""
    by_request: dict[str, list[ModelAttempt]] = defaultdict(list)
    for attempt in attempts:
        by_request[attempt.request_id].append(attempt)
    generated = lost = recomputed = 0
    for rid, tries in by_request.items():
        tries.sort(key=lambda a: a.started)
        made = sum(a.generated for a in tries)
        generated += made
        if rid in delivered:
            lost += max(0, made - delivered[rid])
        else:
            lost += made - tries[-1].generated
        first = tries[0].prompt_tokens
        for later in tries[1:]:
            grown = later.prompt_tokens - first
            if grown > 0:
                recomputed += min(grown, max(0, later.prompt_tokens - later.cached_tokens))
    return Waste(generated, lost, recomputed)
