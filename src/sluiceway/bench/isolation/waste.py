"""Generated work thrown away (pure): every token generated for a request whose answer no
client received, tokens of evicted attempts that were not resumed, and prompt tokens a resumed
attempt had to recompute because they missed the prefix cache.

Per request: when the client got an answer of T tokens, the waste is every attempt's
generated tokens minus T (a resumed completion keeps its earlier tokens, so it wastes none of
them); when it did not (abandoned while queued or running, cancelled, answered at its deadline
mid-run, cut at the end of a stage), every token any attempt generated was for nobody. A later
attempt whose prompt grew (prompt + generated text) adds the part of that growth it could not
take from the cache.
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
    scheduled: float | None = None  # the model server gave it a batch slot
    last_token: float | None = None  # its last generated token
    ended: float | None = None  # it left the model server (finished or aborted)
    finish_reason: str | None = None  # "length" / "stop" when it ran to its end, "abort" ...

    @property
    def completed(self) -> bool:
        """It ran to its last token (not aborted, evicted or cut)."""
        return self.finish_reason in ("length", "stop")

    @property
    def service_time(self) -> float | None:
        """Slot to last token, for a completed attempt: the model's own time, no queueing."""
        if not self.completed or self.scheduled is None or self.last_token is None:
            return None
        return self.last_token - self.scheduled


@dataclass(frozen=True)
class Waste:
    """Generated tokens; of them, tokens of requests no client received (``undelivered``) and
    tokens of evicted attempts a delivered answer did not keep (``evicted``); and prompt tokens
    recomputed on resume that missed the prefix cache."""

    generated: int = 0
    evicted: int = 0
    undelivered: int = 0
    recomputed: int = 0

    @property
    def wasted(self) -> int:
        return self.evicted + self.undelivered + self.recomputed


def wasted_tokens(attempts: Iterable[ModelAttempt], delivered: Mapping[str, int]) -> Waste:
    """The waste of ``attempts``; ``delivered`` maps request id -> tokens the client got."""
    by_request: dict[str, list[ModelAttempt]] = defaultdict(list)
    for attempt in attempts:
        by_request[attempt.request_id].append(attempt)
    generated = evicted = undelivered = recomputed = 0
    for rid, tries in by_request.items():
        tries.sort(key=lambda a: a.started)
        made = sum(a.generated for a in tries)
        generated += made
        if rid in delivered:
            evicted += max(0, made - delivered[rid])
        else:
            undelivered += made
        first = tries[0].prompt_tokens
        for later in tries[1:]:
            grown = later.prompt_tokens - first
            if grown > 0:
                recomputed += min(grown, max(0, later.prompt_tokens - later.cached_tokens))
    return Waste(generated, evicted, undelivered, recomputed)
