"""What became of each async request (pure): one final fate per request, so the fates of a
stage add up to its arrivals and nothing hides between "dispatched" and "answered".

| fate | the client ... |
|---|---|
| ``delivered`` | got its answer (200) within its patience |
| ``abandoned_queued`` | gave up while the request waited (no model attempt was live then) |
| ``abandoned_running`` | gave up while a model attempt was live (its tokens reached nobody) |
| ``deadline`` | was answered 504 at the request's deadline (or refused as infeasible) |
| ``dropped`` | was refused 429 or 503 (a gate, the router or a full queue) |
| ``error`` | got any other answer, or the call failed |

Evictions, resumes and deadlines met after the model started (``deadline_ran``: model time
spent on a 504) are counted beside the fates, not as fates: an evicted request still ends in
exactly one of them. Without a per-attempt view of the model servers (an external
client) every abandoned request counts as ``abandoned_queued``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from sluiceway.bench.isolation.records import RequestRecord
from sluiceway.bench.isolation.waste import ModelAttempt

__all__ = ["FATES", "fate_counts", "fate_of"]

FATES = (
    "delivered",
    "abandoned_queued",
    "abandoned_running",
    "deadline",
    "dropped",
    "error",
)


def _live_at(attempts: Sequence[ModelAttempt], at: float) -> bool:
    return any(a.started <= at and (a.ended is None or a.ended >= at) for a in attempts)


def fate_of(record: RequestRecord, attempts: Sequence[ModelAttempt] = ()) -> str:
    """The final fate of one async request, given its model attempts."""
    if record.ok:
        return "delivered"
    if record.abandoned:
        return "abandoned_running" if _live_at(attempts, record.end) else "abandoned_queued"
    if record.status == 504:
        return "deadline"
    if record.status in (429, 503):
        return "dropped"
    return "error"


def fate_counts(
    records: Iterable[RequestRecord], attempts: Iterable[ModelAttempt]
) -> dict[str, int]:
    """``arrivals``, one count per fate (summing to the arrivals), and beside them the
    requests that were ``evicted`` (an attempt aborted, another started) and ``resumed`` (a
    later attempt's prompt grew by the text already generated), and the ``deadline`` ones
    that had a model attempt (``deadline_ran``)."""
    by_request: dict[str, list[ModelAttempt]] = defaultdict(list)
    for attempt in attempts:
        by_request[attempt.request_id].append(attempt)
    out = dict.fromkeys(("arrivals", *FATES, "evicted", "resumed", "deadline_ran"), 0)
    for record in records:
        tries = sorted(by_request.get(record.request_id, ()), key=lambda a: a.started)
        out["arrivals"] += 1
        fate = fate_of(record, tries)
        out[fate] += 1
        out["deadline_ran"] += int(fate == "deadline" and bool(tries))
        out["evicted"] += int(len(tries) > 1)
        out["resumed"] += int(any(t.prompt_tokens > tries[0].prompt_tokens for t in tries[1:]))
    return out
