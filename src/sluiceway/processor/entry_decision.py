"""What ingest decides for one examined entry (pure values): its :class:`Fate`, the
:class:`Candidate` it becomes when the queue gates admit it, and the :class:`Scan` of a batch."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from sluiceway.broker.base import ClaimAsk, Entry
from sluiceway.gates.base import Holdings
from sluiceway.wire import Envelope

__all__ = ["SETTLED", "Candidate", "EntryDecision", "Fate", "Scan"]


class Fate(Enum):
    """What ingest decided for one examined entry."""

    ADMITTED = "admitted"  # passed the queue gates: a candidate for the batch claim
    SETTLED = "settled"  # answered or moved aside: no longer pending
    HELD = "held"  # the queue gates hold it: it stays pending, the scan skips it
    CLOSED = "closed"  # the queue's budget is spent: it stays pending, stop scanning


@dataclass(slots=True)
class Candidate:
    """An entry that passed decode, expiry and the queue gates; it waits for the batch claim.
    ``holdings`` are what its gates acquired (released again if the claim is lost)."""

    entry: Entry
    envelope: Envelope
    owner: str
    holdings: Holdings

    @property
    def deadline(self) -> float:
        return float(self.envelope.data.deadline)

    def ask(self, lease_until: float) -> ClaimAsk:
        e = self.envelope
        return ClaimAsk(self.entry, e.id, e.request_token, self.owner, lease_until)


@dataclass(frozen=True, slots=True)
class EntryDecision:
    """Ingest's one decision for one entry: its :class:`Fate`, the ``candidate`` when
    ADMITTED, the ``gate_decisions_total`` ``reason`` when HELD or CLOSED."""

    fate: Fate
    candidate: Candidate | None = None
    reason: str = ""

    @classmethod
    def admitted(cls, candidate: Candidate) -> EntryDecision:
        return cls(Fate.ADMITTED, candidate)

    @classmethod
    def held(cls, reason: str, *, closed: bool = False) -> EntryDecision:
        return cls(Fate.CLOSED if closed else Fate.HELD, reason=reason)


SETTLED = EntryDecision(Fate.SETTLED)


@dataclass(slots=True)
class Scan:
    """What screening one peeked batch found."""

    chosen: list[Candidate] = field(default_factory=list)
    skipped: int = 0
    closed: bool = False

    def add(self, decision: EntryDecision) -> None:
        if decision.candidate is not None:
            self.chosen.append(decision.candidate)
        self.closed = self.closed or decision.fate is Fate.CLOSED
        self.skipped += decision.fate is Fate.HELD
