"""Contracts of flow control: requests, items, outcomes and the policy protocols.

Standard library only (docs/design-rules.md rule 31). Times are Unix seconds (scaled, rule 1); sizes
are bytes; saturation is dimensionless with 1.0 = the detector's set point.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from sluiceway.wire import headers

if TYPE_CHECKING:
    from sluiceway.flowcontrol.flows import Flow

__all__ = [
    "DEFAULT_FAIRNESS_ID",
    "BandLoad",
    "BandQueue",
    "CapacityView",
    "DropReason",
    "DropStatus",
    "EndpointSnapshot",
    "FairnessPolicy",
    "Finalized",
    "FlowKey",
    "Item",
    "ItemState",
    "LimitInput",
    "OrderingPolicy",
    "Outcome",
    "Request",
    "SaturationDetector",
    "Usage",
    "UsageLimitPolicy",
]

DEFAULT_FAIRNESS_ID = headers.DEFAULT_FAIRNESS_ID


class Outcome(enum.Enum):
    """How one request left flow control's queue (values are upstream's labels): dispatched, or
    never run (rejected at the door, evicted from the queue). ``DISPATCHED`` ends the queueing,
    not the request: the request then runs, and may still be evicted in flight (chosen by
    the controller, confirmed by ``on_finished``), which is no second outcome."""

    DISPATCHED = "Dispatched"
    REJECTED_CAPACITY = "RejectedCapacity"
    REJECTED_NO_ENDPOINTS = "RejectedNoEndpoints"
    REJECTED_OTHER = "RejectedOther"
    EVICTED_TTL = "EvictedTTL"
    EVICTED_NO_ENDPOINTS = "EvictedNoEndpoints"
    EVICTED_CONTEXT_CANCELLED = "EvictedContextCancelled"
    EVICTED_OTHER = "EvictedOther"


class DropReason(enum.StrEnum):
    """Values of the ``x-llm-d-request-dropped-reason`` response header (spelled in ``wire``)."""

    SATURATED = headers.REASON_SATURATED
    TTL_EXPIRED = headers.REASON_TTL_EXPIRED
    NO_ENDPOINTS = headers.REASON_NO_ENDPOINTS
    CONTEXT_CANCELLED = headers.REASON_CONTEXT_CANCELLED
    SHUTTING_DOWN = headers.REASON_SHUTTING_DOWN
    EVICTED = headers.REASON_EVICTED


@dataclass(frozen=True, slots=True)
class DropStatus:
    """What the router answers for a drop: status code and dropped-reason header (or None)."""

    status: int
    reason: DropReason | None


_TOO_MANY = 429
_UNAVAILABLE = 503


def _http_for(outcome: Outcome, pool_empty: bool, shutting_down: bool) -> DropStatus | None:
    if outcome is Outcome.DISPATCHED:
        return None
    if shutting_down:
        return DropStatus(_UNAVAILABLE, DropReason.SHUTTING_DOWN)
    if outcome is Outcome.REJECTED_CAPACITY:
        return DropStatus(_TOO_MANY, DropReason.SATURATED)
    if outcome in (Outcome.REJECTED_NO_ENDPOINTS, Outcome.EVICTED_NO_ENDPOINTS):
        return DropStatus(_UNAVAILABLE, DropReason.NO_ENDPOINTS)
    if outcome is Outcome.EVICTED_TTL:
        if pool_empty:
            return DropStatus(_UNAVAILABLE, DropReason.NO_ENDPOINTS)
        return DropStatus(_TOO_MANY, DropReason.TTL_EXPIRED)
    if outcome is Outcome.EVICTED_CONTEXT_CANCELLED:
        return DropStatus(_UNAVAILABLE, DropReason.CONTEXT_CANCELLED)
    return DropStatus(500, None)


class FlowKey(NamedTuple):
    """A flow: one tenant (fairness id) at one priority. The same id at two priorities is two
    independent flows."""

    fairness_id: str
    priority: int

    def __str__(self) -> str:
        return f"{self.fairness_id}:{self.priority}"


@dataclass(frozen=True, slots=True)
class Request:
    """What the router hands to flow control for one HTTP request.

    ``ttl``: the client's ``x-llm-d-inference-ttl`` in seconds; it may only shorten the
    configured budget. ``received_at``: Unix seconds the router received the request (defaults
    to the enqueue time). ``prompt_tokens`` / ``max_tokens`` feed token-fair accounting and the
    token concurrency mode; the router estimates them when unknown.
    """

    request_id: str
    fairness_id: str = DEFAULT_FAIRNESS_ID
    priority: int = 0
    byte_size: int = 0
    received_at: float | None = None
    ttl: float | None = None
    slo_ttft_ms: int | None = None
    prompt_tokens: int = 0
    max_tokens: int = 0

    @property
    def flow_key(self) -> FlowKey:
        return FlowKey(self.fairness_id, self.priority)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.max_tokens


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens actually used, from the response's ``usage`` block."""

    prompt_tokens: int
    completion_tokens: int


class ItemState(enum.Enum):
    QUEUED = "queued"
    IN_FLIGHT = "in_flight"
    DONE = "done"


class Item:
    """One queued or in-flight request. Mutable; owned by the controller (single writer).

    ``key`` is the ordering policy's sort key, fixed at enqueue. ``band`` is the priority of
    the band the item actually queues in (band 0 when its own band is not provisioned).
    """

    __slots__ = (
        "band",
        "charged",
        "dispatch_time",
        "enqueue_time",
        "evicted",
        "flow",
        "key",
        "request",
        "seq",
        "state",
        "ttl",
    )

    def __init__(
        self, request: Request, flow: Flow, *, band: int, enqueue_time: float, ttl: float, seq: int
    ) -> None:
        self.request = request
        self.flow = flow
        self.band = band
        self.enqueue_time = enqueue_time
        self.ttl = ttl
        self.seq = seq
        self.key: tuple[float, float] = (enqueue_time, 0.0)
        self.state = ItemState.QUEUED
        self.charged = 0.0
        self.dispatch_time = 0.0
        self.evicted = False

    @property
    def received_at(self) -> float:
        got = self.request.received_at
        return self.enqueue_time if got is None else got

    def __repr__(self) -> str:
        return f"Item({self.request.request_id!r}, band={self.band}, {self.state.value})"


class Finalized(NamedTuple):
    """The one record of how a request left the queue (exactly once per request; see
    :class:`Outcome`: for a dispatched request the run is still to come).

    ``waited``: seconds from enqueue to this outcome. ``band``: the band it queued in;
    ``priority``: the priority it asked for (metrics label). A named tuple: one is built per
    dispatch, on the hot path.
    """

    request_id: str
    outcome: Outcome
    fairness_id: str
    priority: int
    band: int
    waited: float
    pool_empty: bool = False
    shutting_down: bool = False

    def http(self) -> DropStatus | None:
        """The HTTP answer for a drop (docs/design-rules.md rule 22); None when dispatched."""
        return _http_for(self.outcome, self.pool_empty, self.shutting_down)


@dataclass(frozen=True, slots=True)
class EndpointSnapshot:
    """One model server as last seen by the router's signals (None = not reported).

    ``scraped_at``: Unix seconds of the metrics sample; ``role``: the ``llm-d.ai/role`` label.
    """

    name: str
    role: str | None = None
    waiting: int | None = None
    kv_usage: float | None = None
    inflight_requests: int | None = None
    inflight_tokens: int | None = None
    scraped_at: float | None = None


@dataclass(frozen=True, slots=True)
class CapacityView:
    """The pool as the dispatch loop sees it for one cycle.

    ``saturation``: >= 0, 1.0 = set point. ``request_cost`` / ``token_cost``: the saturation one
    more dispatched request adds (per request / per token); the loop adds it after each dispatch
    so a cycle can dispatch many without overshooting (docs/design-rules.md rule 21).
    ``waiting_elsewhere``: (priority, requests) other router replicas of the pool wait for: a
    band leaves room for what waits elsewhere in higher bands (docs/flow-control.md);
    ``fair_reserve``: (priority, requests) waiting elsewhere in that same band for tenants this
    replica already serves more than its share of: room left to them too.
    """

    saturation: float
    pool_empty: bool = False
    request_cost: float = 0.0
    token_cost: float = 0.0
    stages: tuple[tuple[str, float], ...] = field(default=())
    waiting_elsewhere: tuple[tuple[int, int], ...] = field(default=())
    fair_reserve: tuple[tuple[int, int], ...] = field(default=())

    @property
    def elsewhere(self) -> bool:
        """Whether other replicas' demand lowers this replica's ceilings."""
        return bool(self.waiting_elsewhere or self.fair_reserve)

    def reserved_above(self, priority: int) -> float:
        """The saturation needed by requests waiting elsewhere in bands above ``priority``,
        and in ``priority`` itself where this replica has had its fair share."""
        waiting = sum(n for p, n in self.waiting_elsewhere if p > priority)
        waiting += sum(n for p, n in self.fair_reserve if p == priority)
        return waiting * self.request_cost

    def cost(self, tokens: int) -> float:
        """Predicted saturation added by one request of ``tokens`` tokens."""
        return max(self.request_cost, self.token_cost * tokens)


class OrderingPolicy(Protocol):
    """Orders items inside one flow: smaller key first."""

    @property
    def name(self) -> str: ...

    def key(self, item: Item) -> tuple[float, float]: ...


class BandQueue(Protocol):
    """Storage and pick order of one band, owned by its fairness policy.

    ``pop`` returns the next queued item (skipping items no longer queued) or None.
    ``discard`` tells the queue an item left without being popped (cancel, expiry).
    ``settle`` reconciles an item's charge with its real usage after it finished.
    """

    def push(self, item: Item) -> None: ...

    def pop(self) -> Item | None: ...

    def discard(self, item: Item) -> None: ...

    def settle(self, item: Item, usage: Usage | None) -> None: ...


class FairnessPolicy(Protocol):
    """Picks which flow of a band goes next; one shared instance, state per band."""

    @property
    def name(self) -> str: ...

    def new_band(self) -> BandQueue: ...


class BandLoad(Protocol):
    """Read-only load of one band, as usage-limit policies see it (counts of requests)."""

    @property
    def priority(self) -> int: ...

    @property
    def queued(self) -> int: ...

    @property
    def inflight(self) -> int: ...


class LimitInput(NamedTuple):
    """Everything a usage-limit policy may read in one cycle.

    ``bands`` are in dispatch order (priority descending, band 0 included); ``unit`` is the
    saturation one request adds (0 when unknown).
    """

    now: float
    saturation: float
    bands: Sequence[BandLoad]
    unit: float


class UsageLimitPolicy(Protocol):
    """Per-band dispatch ceilings, non-increasing in band order; a band is gated when
    ``saturation >= ceiling``. Called once per dispatch cycle."""

    @property
    def name(self) -> str: ...

    def ceilings(self, view: LimitInput) -> Sequence[float]: ...


class SaturationDetector(Protocol):
    """Turns endpoint snapshots into a :class:`CapacityView` (pure: ``now`` is passed in)."""

    @property
    def name(self) -> str: ...

    def view(self, endpoints: Sequence[EndpointSnapshot], now: float) -> CapacityView: ...

    def note_dispatched(self, count: int) -> None:
        """``count`` requests were dispatched since the last view (in-flight credit)."""
        ...
