"""The ``Broker`` protocol: where queue entries wait, are claimed, retried and answered.

This is the seam between the processor and every storage backend. It is shaped after the Redis
layout of docs/brokers.md so that each method maps onto one Redis command or one Lua script:

============================  ===============================================================
method                        Redis
============================  ===============================================================
``peek``                      ``ZRANGE <queue> -inf +inf BYSCORE LIMIT offset n WITHSCORES``
``claim``                     Lua: ``ZREM`` pending (0 = lost the race) + ``HSET <q>:claimed``
                              + ``HSET <q>:claim-owners`` + ``ZADD <q>:claims-idx lease``
``claim_many``                one Lua call: ``claim`` for each entry of a peeked batch, plus
                              ``GET request-cancel:<id>`` of each one won (the dequeue check)
``renew``                     Lua: owner check, ``ZADD <q>:claims-idx`` new lease
``ack``                       Lua: owner check, ``LPUSH`` result (+ ``EXPIRE``), drop the claim,
                              token-guarded ``DEL request-active:<id>`` / ``request-cancel:<id>``
``release``                   Lua: owner check, ``ZADD`` pending at the original score, drop claim
``retry_after``               Lua: owner check, ``ZADD retry-sortedset <due> <member>``, drop claim
``move_due_retries``          ``ZRANGE retry-sortedset -inf now BYSCORE``; per member ``ZREM``
                              (winner only) + ``ZADD <origin queue> <deadline>``
``reclaim_expired``           ``ZRANGE <q>:claims-idx -inf now BYSCORE``; per key Lua moves
                              the claimed member back to pending and drops the claim
``quarantine``                Lua: ``ZREM`` pending (winner only) + ``LPUSH <queue>:invalid``
                              + ``HSET <queue>:invalid:info <digest> <reason JSON>``
``backlog`` / ``count_due``   ``ZCARD`` / ``ZCOUNT <queue> -inf <t>``
``enqueue``                   MULTI: ``DEL request-cancel:<id>``, ``SET request-active:<id>
                              <token> EX ttl``, ``ZADD <queue> <score> <member>``
``cancel``                    Lua: copy ``request-active:<id>`` to ``request-cancel:<id>`` (TTL)
``is_cancelled``              ``GET request-cancel:<id>`` == token
``pop_result``                ``BRPOP <list> timeout``
``peek_result``               ``LINDEX <list> -1``
``wait_for_result``           keyspace events on the list (one pattern subscription per prefix)
``expire_result``             ``PEXPIRE <list> ms`` (``DEL`` for 0)
``is_pending``                ``EXISTS request-active:<id>``
``revive``                    Lua: ``DEL request-cancel:<id>`` if it equals the active token
============================  ===============================================================

Time (docs/design-rules.md rule 1): every *instant* (``now``, ``lease_until``, ``due``) is scaled
Unix seconds passed in by the caller; brokers never read a clock to make a decision. Every *TTL*
that becomes a Redis key expiry (``ResultWrite.expire_after``, ``ActiveMarker.expire_after``,
``cancel(..., expire_after=...)``) is in **wall** seconds: callers convert with ``clock.to_wall``.
Blocking waits (``wait_for_work``, ``pop_result``) take wall-second ``block_for`` bounds.

Delivery (docs/design-rules.md rule 13): an entry is pending, claimed, waiting in the retry set, or
answered (its result pushed and its claim gone), never two of these at once. ``ack``, ``release``
and ``retry_after`` are fenced by the claim's owner token: a worker whose lease lapsed and whose
entry was reclaimed and claimed again pushes nothing and gets ``False``.

This module imports only the standard library and ``peek_order`` (docs/design-rules.md rule 31).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from sluiceway.broker.peek_order import EARLIEST_DEADLINE, PeekOrder

if TYPE_CHECKING:
    from sluiceway.clock import Clock

__all__ = [
    "CANCEL_MARKER_TTL_SECONDS",
    "CLAIM_KEY_SEPARATOR",
    "DEFAULT_RETRY_QUEUE",
    "ActiveMarker",
    "Broker",
    "BrokerFactory",
    "BrokerOptions",
    "Claim",
    "ClaimAsk",
    "ClaimOutcome",
    "Entry",
    "RenewOutcome",
    "ResultWrite",
    "claim_each",
    "claim_key",
    "retry_origin",
    "split_claim_key",
]

DEFAULT_RETRY_QUEUE = "retry-sortedset"
# How long a cancellation marker lives (scaled seconds; 7 days, as upstream).
CANCEL_MARKER_TTL_SECONDS = 7 * 24 * 3600.0
CLAIM_KEY_SEPARATOR = "\x00"


def claim_key(request_id: str, request_token: str) -> str:
    """The claim key of one generation of a request: ``id + "\\x00" + request_token``."""
    return f"{request_id}{CLAIM_KEY_SEPARATOR}{request_token}"


def split_claim_key(key: str) -> tuple[str, str]:
    """The (id, request_token) a claim key was made of."""
    request_id, _, token = key.rpartition(CLAIM_KEY_SEPARATOR)
    return request_id, token


@dataclass(frozen=True, slots=True)
class Entry:
    """A pending queue entry as stored: the raw member and its score (deadline, Unix seconds)."""

    queue: str
    member: str
    score: float


@dataclass(frozen=True, slots=True)
class Claim:
    """An entry taken out of its queue by one owner until ``lease_until`` (scaled Unix seconds).

    ``queue`` is the origin queue (the claim bookkeeping lives under it), ``key`` is
    :func:`claim_key`, ``owner`` the fencing token (16 hex) chosen by the claimer, ``score``
    the pending score to restore on release or reclaim.
    """

    queue: str
    key: str
    member: str
    score: float
    owner: str
    lease_until: float


@dataclass(frozen=True, slots=True)
class ClaimAsk:
    """One entry of a batch claim: the entry, its generation, the claimer's owner token and
    the lease end (scaled Unix seconds)."""

    entry: Entry
    request_id: str
    request_token: str
    owner: str
    lease_until: float

    @property
    def key(self) -> str:
        return claim_key(self.request_id, self.request_token)


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    """What a batch claim got for one ask: the claim (None: another consumer won or this
    generation is already claimed) and whether the generation was found cancelled. A cancelled
    generation is still claimed, so the caller can answer it CANCELLED and ack at once."""

    claim: Claim | None
    cancelled: bool = False


class RenewOutcome(Enum):
    """What a lease renewal found (upstream's 1 / 0 / -1)."""

    RENEWED = "renewed"
    MISSING = "missing"  # the claim is gone (acked, released or reclaimed and finished)
    STOLEN = "stolen"  # reclaimed and claimed again by another owner


@dataclass(frozen=True, slots=True)
class ResultWrite:
    """One result record to push with an ack.

    ``destination`` is the result list; ``record`` the JSON text of the result (the wire format of
    ``sluiceway.wire.result``); ``expire_after`` the list's expiry in wall seconds after the push
    (``result_ttl_seconds``), or None. ``request_id`` / ``request_token`` guard the cleanup of the
    ``request-active:`` and ``request-cancel:`` markers: they are deleted only while they still hold
    this token, so an old generation never clears a newer one's markers.
    """

    destination: str
    record: str
    request_id: str
    request_token: str
    expire_after: float | None = None


@dataclass(frozen=True, slots=True)
class ActiveMarker:
    """The producer's ``request-active:<id>`` marker written with an enqueue.

    ``expire_after`` is the marker's TTL in wall seconds (time until the deadline).
    """

    request_id: str
    request_token: str
    expire_after: float


def retry_origin(member: str) -> tuple[str, float] | None:
    """Where a retried member re-enters: (``internal.request_queue_name``, ``data.deadline``).

    docs/design-rules.md rule 7: a retry re-enters its origin queue at its original deadline score.
    Returns None when the member does not say (the mover then uses its fallback queue and, lacking a
    deadline, the due time).
    """
    try:
        doc = json.loads(member)
        queue = doc.get("internal", {}).get("request_queue_name") or ""
        deadline = float(doc["data"]["deadline"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if not isinstance(queue, str) or not queue:
        return None
    return queue, deadline


@runtime_checkable
class Broker(Protocol):
    """Async storage of queue entries, claims, retries, results and cancellation markers.

    Implementations: ``memory`` (in-process), ``sqlite``, ``redis``. All methods are safe to call
    from many tasks at once; cross-process safety is the backend's (memory has none to offer).
    """

    # -- consumer side: entries -----------------------------------------------------------

    async def peek(
        self, queue: str, limit: int, *, offset: int = 0, order: PeekOrder = EARLIEST_DEADLINE
    ) -> list[Entry]:
        """Up to ``limit`` pending entries in ``order``, past the first ``offset``; removes none."""
        ...

    async def claim(
        self, entry: Entry, *, key: str, owner: str, lease_until: float
    ) -> Claim | None:
        """Move ``entry`` from pending to claimed under ``owner`` until ``lease_until``.

        None when the member is no longer pending (another consumer won, or it was removed).
        """
        ...

    async def claim_many(self, asks: Sequence[ClaimAsk]) -> list[ClaimOutcome]:
        """:meth:`claim` each ask in order, and check each won generation's cancel marker.

        One outcome per ask, in order. Exactly the semantics of :meth:`claim` followed by
        :meth:`is_cancelled` per ask (see :func:`claim_each`); backends may do it in one step.
        """
        ...

    async def renew(self, claim: Claim, *, lease_until: float) -> RenewOutcome:
        """Extend the lease of a claim we still own."""
        ...

    async def ack(self, claim: Claim, result: ResultWrite) -> bool:
        """Atomically push ``result`` and drop the claim; False (nothing pushed) if fenced."""
        ...

    async def release(self, claim: Claim) -> bool:
        """Put the claimed member back to pending at ``claim.score``; False if fenced."""
        ...

    async def retry_after(self, claim: Claim, *, member: str, due: float) -> bool:
        """Atomically drop the claim and park ``member`` in the retry set until ``due``.

        ``member`` is the updated envelope (retry count, origin queue); it re-enters its origin
        queue through :meth:`move_due_retries`. False (nothing parked) if fenced.
        """
        ...

    async def move_due_retries(self, now: float, limit: int, *, fallback_queue: str) -> int:
        """Move up to ``limit`` retries due at ``now`` back to their origin queues.

        The origin and score come from :func:`retry_origin`; members without one go to
        ``fallback_queue`` at score ``now``. Each member moves exactly once even with several
        movers. Returns how many moved.
        """
        ...

    async def next_retry_due(self) -> float | None:
        """The earliest due time in the retry set, or None when it is empty."""
        ...

    async def reclaim_expired(self, queue: str, now: float, limit: int) -> int:
        """Return up to ``limit`` claims of ``queue`` whose lease ended before ``now`` to pending.

        They re-enter at their original score. Returns how many were reclaimed.
        """
        ...

    async def quarantine(self, entry: Entry, *, reason: str = "", now: float = 0.0) -> bool:
        """Move an unparsable pending member to ``<queue>:invalid`` (kept, never deleted:
        docs/design-rules.md rule 14).

        Also records ``reason`` and ``now`` (scaled Unix seconds) under the member's digest
        in ``<queue>:invalid:info``. False when it was no longer pending.
        """
        ...

    async def backlog(self, queue: str) -> int:
        """How many entries are pending in ``queue`` (claimed and retrying ones excluded)."""
        ...

    async def count_due(self, queue: str, limits: Sequence[float]) -> list[int]:
        """For each limit (scaled Unix seconds), how many pending entries score at or below it.

        Feeds ``deadline_proximity_millis``.
        """
        ...

    async def is_cancelled(self, request_id: str, request_token: str) -> bool:
        """Whether ``request-cancel:<id>`` holds ``request_token`` (this generation)."""
        ...

    async def wait_for_work(self, queues: Sequence[str], block_for: float) -> bool:
        """Block until an entry may have arrived on ``queues``, at most ``block_for`` wall seconds.

        Returns True when woken by an arrival (enqueue, release, reclaim, retry move), False on
        timeout. Spurious True is allowed; backends without notifications just sleep.
        """
        ...

    # -- producer side ---------------------------------------------------------------------

    async def enqueue(
        self,
        queue: str,
        entries: Sequence[tuple[str, float]],
        *,
        markers: Sequence[ActiveMarker] = (),
    ) -> int:
        """Add ``(member, score)`` pairs to ``queue`` with their active markers, in one step.

        Each marker also clears a stale ``request-cancel:<id>``. Returns how many were added.
        """
        ...

    async def cancel(self, request_id: str, *, expire_after: float) -> bool:
        """Mark the current generation of ``request_id`` cancelled (TTL in wall seconds).

        False when no ``request-active:<id>`` marker exists (unknown or finished request).
        """
        ...

    async def pop_result(self, destination: str, block_for: float) -> str | None:
        """Take the oldest result record from a result list (BRPOP); None after ``block_for``.

        ``block_for`` is wall seconds; 0 means do not block.
        """
        ...

    async def result_count(self, destination: str) -> int:
        """How many records wait in a result list."""
        ...

    # -- result mailboxes (the coordinator's per-request result lists) -----------------------

    async def peek_result(self, destination: str) -> str | None:
        """The record :meth:`pop_result` would take next, without taking it (``LINDEX -1``)."""
        ...

    async def wait_for_result(self, destination: str, block_for: float) -> bool:
        """Block until a record may have arrived in ``destination``, at most ``block_for``
        wall seconds.

        Woken by the backend (keyspace events, a local push), never by a query per waiter;
        True when woken, False on timeout. Spurious True is allowed.
        """
        ...

    async def expire_result(self, destination: str, after: float) -> None:
        """Shorten a result list's life to ``after`` wall seconds from now; 0 deletes it."""
        ...

    async def is_pending(self, request_id: str) -> bool:
        """Whether a generation of ``request_id`` is still unanswered (its active marker
        exists: queued, claimed, retrying or running)."""
        ...

    async def revive(self, request_id: str) -> bool:
        """Withdraw a cancellation of the current generation (compare-and-delete of
        ``request-cancel:<id>`` against ``request-active:<id>``), so a retried client
        re-attaches to its still-queued request. True when a cancellation was withdrawn."""
        ...

    async def ping(self) -> None:
        """Raise :class:`~sluiceway.errors.BrokerError` when the backend is unreachable."""
        ...

    async def aclose(self) -> None:
        """Release connections; the broker is unusable afterwards."""
        ...


async def claim_each(broker: Broker, asks: Sequence[ClaimAsk]) -> list[ClaimOutcome]:
    """The reference :meth:`Broker.claim_many`: one :meth:`~Broker.claim` and (when won) one
    :meth:`~Broker.is_cancelled` per ask."""
    out: list[ClaimOutcome] = []
    for ask in asks:
        claim = await broker.claim(
            ask.entry, key=ask.key, owner=ask.owner, lease_until=ask.lease_until
        )
        cancelled = claim is not None and await broker.is_cancelled(
            ask.request_id, ask.request_token
        )
        out.append(ClaimOutcome(claim, cancelled))
    return out


@dataclass(frozen=True, slots=True)
class BrokerOptions:
    """What a broker factory needs to open a backend.

    ``url``: backend address (``redis://...``, a SQLite path, or None for memory); ``time_scale``:
    the process time scale (Redis TTLs are divided by it, docs/design-rules.md rule 1);
    ``settings``: the raw transport config mapping (mode, addrs, master_name, ...), for
    backend-specific keys; ``url_aliases``: other URLs that name the same server; ``clock``:
    the processor's clock, for backends that must turn instants into durations (Pub/Sub ack
    deadlines), None where the backend needs none.
    """

    url: str | None = None
    time_scale: float = 1.0
    settings: Mapping[str, object] = field(default_factory=dict)
    url_aliases: tuple[str, ...] = ()
    clock: Clock | None = None


class BrokerFactory(Protocol):
    """Opens a broker (registered by transport name in :mod:`sluiceway.broker`)."""

    def __call__(self, options: BrokerOptions) -> Awaitable[Broker]: ...
