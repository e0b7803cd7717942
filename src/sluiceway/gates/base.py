"""The ``Gate`` protocol: one admission decision per request, as a value.

A gate guards a queue (applied at ingest, before the claim) or a worker pool (applied inside
the worker, right before dispatch). It answers with a :class:`Decision`:

- ``CONTINUE``: go on (the next gate in a chain, then dispatch);
- ``WAIT``: not now, keep the request where it is and ask again later (queue level: it stays
  pending; pool level: the worker parks, up to ``--gate-wait-timeout``);
- ``REFUSE``: not now, give the request back (queue level: stays pending; pool level: returns
  to the broker);
- ``DROP``: never; the request gets a ``GATE_DROPPED`` result (the gate may supply its payload);
- ``ERROR``: the gate could not decide (its store or signal failed); queue level leaves the
  request pending, pool level writes ``GATE_ERROR``.

Resources a gate takes (a quota slot) are registered in the request's :class:`Holdings` as a
release callback (and optionally a lease renewal run by the claim heartbeat).
When a chain stops early, what it took is released in reverse order: a failed chain holds
nothing.

Budget: ``budget(now)`` in [0, 1]; a budget b becomes the in-flight target
``ceil(b x W)`` for the pool of W workers the gate guards; 1 sets no cap. Several processors
of one pool split that target by live membership (``pool_share``).

Feedback: a pool gate that learns from the answers to what it admitted (``aimd``) implements
:class:`Feedback`; the worker hands it each attempt's :class:`AnswerFacts`. The registry wraps
a combinator that nests such gates in a :class:`FeedbackRelay`, so the worker only ever looks
at the gate it was given.

Times are scaled Unix seconds passed in by the caller. Standard library only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Protocol, runtime_checkable

from sluiceway.gates.pool_share import SOLE, PoolShare, in_flight_target

__all__ = [
    "CLASSIFICATION_LABEL",
    "CONTINUE",
    "REFUSE",
    "WAIT",
    "AnswerFacts",
    "BudgetGate",
    "Decision",
    "Feedback",
    "FeedbackRelay",
    "Gate",
    "GateRequest",
    "Holdings",
    "Release",
    "Renew",
    "Verdict",
    "apply_chain",
    "budget_allows",
    "with_feedback",
]

log = logging.getLogger(__name__)

CLASSIFICATION_LABEL = "classification"

Release = Callable[[], Awaitable[None]]
Renew = Callable[[float], Awaitable[None]]


class Verdict(StrEnum):
    """What a gate decided for one request."""

    CONTINUE = "continue"
    WAIT = "wait"
    REFUSE = "refuse"
    DROP = "drop"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Decision:
    """A gate's answer. ``message`` explains ERROR / DROP; ``drop_payload`` replaces the
    default ``{"error": ...}`` payload of a DROP result (tier-priority-admission's 429 body);
    ``classification`` is what a classifying gate found (``reserved`` / ``overflow``), None
    when the gate does not classify."""

    verdict: Verdict
    message: str = ""
    drop_payload: str | None = None
    classification: str | None = None

    @property
    def admitted(self) -> bool:
        return self.verdict is Verdict.CONTINUE


CONTINUE = Decision(Verdict.CONTINUE)
WAIT = Decision(Verdict.WAIT)
REFUSE = Decision(Verdict.REFUSE)


@dataclass(slots=True)
class GateRequest:
    """What a gate sees of one request (gates read it; a classification goes back in the
    :class:`Decision`). ``holder`` is unique per admission attempt (request token + claim
    owner), the quota holder token. ``deadline`` and ``lease_until`` are scaled Unix seconds.
    """

    request_id: str
    request_token: str
    holder: str
    deadline: float
    lease_until: float
    metadata: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def classification(self) -> str | None:
        """What the queue gate found (``reserved`` / ``overflow``), as a pool gate sees it."""
        return self.labels.get(CLASSIFICATION_LABEL)


@dataclass(slots=True)
class _Held:
    release: Release
    renew: Renew | None


class Holdings:
    """Resources acquired for one request: released once, in reverse order of acquisition."""

    def __init__(self) -> None:
        self._items: list[_Held] = []

    def __len__(self) -> int:
        return len(self._items)

    def add(self, release: Release, renew: Renew | None = None) -> None:
        """Register a release callback (and an optional lease renewal, scaled Unix seconds)."""
        self._items.append(_Held(release, renew))

    def mark(self) -> int:
        """A point to roll back to."""
        return len(self._items)

    async def rollback(self, mark: int) -> None:
        """Release everything acquired after ``mark``, newest first."""
        while len(self._items) > mark:
            held = self._items.pop()
            await _run_release(held.release)

    async def release_all(self) -> None:
        """Release everything, newest first; safe to call twice."""
        await self.rollback(0)

    async def renew_all(self, lease_until: float) -> None:
        """Extend every renewable holding to ``lease_until``."""
        for held in list(self._items):
            if held.renew is not None:
                try:
                    await held.renew(lease_until)
                except Exception:  # a failed renewal must not stop the heartbeat
                    log.warning("gate holding renewal failed", exc_info=True)


async def _run_release(release: Release) -> None:
    try:
        await release()
    except Exception:  # a failed release must not keep the others
        log.warning("gate release failed", exc_info=True)


@runtime_checkable
class Gate(Protocol):
    """An admission decision for queue or pool traffic."""

    async def budget(self, now: float) -> float:
        """Share of capacity this gate allows now, in [0, 1] (always a value, never raises)."""
        ...

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        """Decide for one request; register what it acquired in ``holdings``."""
        ...

    async def aclose(self) -> None:
        """Release connections and background tasks."""
        ...


async def apply_chain(
    gates: Sequence[Gate], request: GateRequest, holdings: Holdings, now: float
) -> Decision:
    """Apply ``gates`` in order; all-or-nothing: the first non-CONTINUE rolls back the chain.
    The decision carries the last classification any gate of the chain made."""
    mark = holdings.mark()
    classification: str | None = None
    for gate in gates:
        decision = await gate.apply(request, holdings, now)
        classification = decision.classification or classification
        if not decision.admitted:
            await holdings.rollback(mark)
            return replace(decision, classification=classification)
    return CONTINUE if classification is None else replace(CONTINUE, classification=classification)


def budget_allows(budget: float, in_flight: int, workers: int, share: PoolShare = SOLE) -> bool:
    """True when one more request fits the in-flight target ``ceil(budget x workers)``, or
    this processor's ``share`` of it when several serve the pool (``pool_share``)."""
    target = in_flight_target(budget, workers, share)
    return target is None or in_flight < target


class BudgetGate:
    """Base for budget-only gates: Apply refuses while the budget is 0."""

    async def budget(self, now: float) -> float:
        raise NotImplementedError

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        return REFUSE if await self.budget(now) <= 0 else CONTINUE

    async def aclose(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class AnswerFacts:
    """What one dispatched attempt came back with, as a feedback gate sees it.

    ``holder`` is the admission's :attr:`GateRequest.holder` (a gate learns only from what it
    admitted); ``status`` is None when no HTTP answer arrived (connection error, timeout);
    ``reason`` the router's drop reason header ("" when absent); ``retry_after`` its
    Retry-After in scaled seconds (None when absent)."""

    holder: str
    status: int | None
    reason: str = ""
    retry_after: float | None = None


@runtime_checkable
class Feedback(Protocol):
    """A gate that learns from the answers to the requests it admitted."""

    def observe(self, answer: AnswerFacts, now: float) -> None:
        """Take one attempt's answer into account (called before the request's release)."""
        ...


class FeedbackRelay:
    """A gate that hands answers on to the feedback gates nested in it: the registry puts one
    around a combinator (``composite``, ``wait-on-refuse`` ...) that holds some, so nesting
    changes no combinator and the worker needs no walk of the chain."""

    def __init__(self, gate: Gate, observers: Sequence[Feedback]) -> None:
        self.gate = gate
        self.observers = tuple(observers)

    async def budget(self, now: float) -> float:
        return await self.gate.budget(now)

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        return await self.gate.apply(request, holdings, now)

    def observe(self, answer: AnswerFacts, now: float) -> None:
        for observer in self.observers:
            observer.observe(answer, now)

    async def aclose(self) -> None:
        await self.gate.aclose()


def with_feedback(gate: Gate, nested: Sequence[Feedback]) -> Gate:
    """``gate`` as built, or relaying answers to the feedback gates ``nested`` in it when it
    takes none itself."""
    if not nested or isinstance(gate, Feedback):
        return gate
    return FeedbackRelay(gate, nested)
