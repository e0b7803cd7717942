"""A work item: one claimed request on its way through a pool, and its resources."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sluiceway.broker.base import Claim
from sluiceway.gates.base import Holdings
from sluiceway.processor.metrics import QueueLabels
from sluiceway.processor.specs import QueueSpec
from sluiceway.wire import Envelope
from sluiceway.wire.lanes import Lane

__all__ = ["OWNER_PREFIX", "WorkItem", "holder_token", "new_owner"]

# Claim owner tokens minted here start with this (16 characters in all, as upstream's 16 hex
# digits): a claim whose owner lacks it was taken by another kind of consumer, e.g. an
# llm-d-async processor on the same queues.
OWNER_PREFIX = "sw"


def new_owner() -> str:
    """A fresh claim owner token (``sw`` + 14 random hex digits). It fences, it guards no
    secret: the module generator (seeded from the OS, reseeded in a forked child) makes it
    without the system call per token that ``secrets`` costs."""
    return f"{OWNER_PREFIX}{random.getrandbits(56):014x}"


def holder_token(request_token: str, owner: str) -> str:
    """The quota holder token of one claim: unique per claim (request token + claim owner)."""
    return f"{request_token}:{owner}"


@dataclass(slots=True)
class WorkItem:
    """A claimed request. ``envelope`` carries the stamped labels (tier, classification) and
    is not replaced; ``holdings`` what its gates acquired; ``ingested_at`` is scaled monotonic
    seconds."""

    claim: Claim
    envelope: Envelope
    queue: QueueSpec
    lane: Lane
    labels: QueueLabels
    owner: str
    ingested_at: float
    holdings: Holdings = field(default_factory=Holdings)
    attempts_here: int = 0
    rank: tuple[int, float] = (0, 0.0)  # (lane, order in its queue), set by the ready buffer
    # Read on every step of the path: taken from the envelope once.
    request_id: str = field(init=False)
    token: str = field(init=False)
    deadline: float = field(init=False)  # scaled Unix seconds

    def __post_init__(self) -> None:
        self.request_id = self.envelope.id
        self.token = self.envelope.request_token
        self.deadline = float(self.envelope.data.deadline)

    @property
    def holder(self) -> str:
        """The quota holder token of this claim."""
        return holder_token(self.token, self.owner)
