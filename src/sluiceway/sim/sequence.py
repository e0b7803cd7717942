"""One request's life inside the engine: what it asked for and how far it has got."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["Admission", "SeqState", "Sequence", "SimRequest"]


class Admission(enum.Enum):
    """What ``Engine.submit`` did with a request."""

    ACCEPTED = "accepted"
    QUEUE_FULL = "queue_full"  # the waiting queue is at max_waiting_queue_length: answer 429
    TOO_LONG = "too_long"  # prompt + max_tokens beyond max_model_len or the whole KV pool


class SeqState(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class SimRequest:
    """A generation request as the engine sees it (token ids, limits, scheduling hints).

    ``priority``: lower runs first under the priority policy (vLLM). ``labels``: (header,
    value) pairs counted by the running-by-label gauge. ``stop_after``: finish with reason
    ``stop`` after this many tokens (where a stop string completes). ``max_tokens_param``: the
    ``max_tokens`` the client sent, None when it sent none (vLLM's histogram of it).
    """

    request_id: str
    prompt: tuple[int, ...]
    max_tokens: int
    priority: int = 0
    ignore_eos: bool = False
    labels: tuple[tuple[str, str], ...] = ()
    stop_after: int | None = None
    max_tokens_param: int | None = None


@dataclass(slots=True, eq=False)
class Sequence:
    """Mutable engine state of one request. Times are scaled seconds on the engine's clock."""

    request: SimRequest
    arrival: float
    order: int
    salt: int
    prompt_len: int = 0  # len(request.prompt), read on every token
    state: SeqState = SeqState.WAITING
    output: list[int] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)
    hashes: list[int] = field(default_factory=list)
    version: int = 0
    scheduled_at: float | None = None
    first_token_at: float | None = None
    last_token_at: float | None = None
    finished_at: float | None = None
    finish_reason: str | None = None
    preemptions: int = 0
    cached_tokens: int = 0  # prompt tokens found in the prefix cache at first admission

    @property
    def request_id(self) -> str:
        return self.request.request_id

    @property
    def num_tokens(self) -> int:
        return self.prompt_len + len(self.output)

    @property
    def finished(self) -> bool:
        return self.state is SeqState.FINISHED
