"""In-flight eviction of sheddable (``priority < 0``) requests when higher demand is blocked.

Victims: in-flight requests of bands below 0, lowest priority first, newest dispatch first
(least work lost). Trigger: a head-of-line stop in the dispatch loop with queued demand in a
band strictly above the lowest victim (the controller finds the demand band).

Sizing, in saturation units: ``credit = saturation / in-flight`` (mean footprint); ``target =
saturation - ceiling``; ``net = target - pending``; nothing when ``net < 0`` or (``net == 0``
with debits pending). Because a band is gated on ``saturation >= ceiling``, freeing exactly
``target`` still leaves it gated; we evict the smallest ``n`` with ``net - n x credit < 0``,
i.e. ``floor(net / credit) + 1`` (upstream rounds up instead and needs one more round), capped
at ``max_per_decision`` and at the victims available.

Pacing (stop-and-wait): no new decision while a revocation is outstanding or a confirmed one's
debit is still cooling (``grace`` seconds after confirmation). Confirmation = the evicted
stream ended (the router calls back). Unconfirmed after ``timeout`` -> counted timed out and
treated as confirmed. A confirmation that finds its demand band empty (the demand was served
or left meanwhile) counts as an over-eviction.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from sluiceway.flowcontrol.base import Item, ItemState
from sluiceway.flowcontrol.settings import EvictionSettings

__all__ = ["Evictor", "Revocation", "evictions_needed"]

_EPS = 1e-9
_MIN_COMPACT = 128


def evictions_needed(net: float, credit: float) -> int:
    """Smallest n >= 1 with ``net - n x credit < 0`` (robust to float noise)."""
    if credit <= 0:
        return 1
    k = net / credit
    if abs(k - round(k)) < _EPS:
        k = float(round(k))
    return max(1, math.floor(k) + 1)


@dataclass(frozen=True, slots=True)
class Revocation:
    """One eviction: ``outcome`` is ``confirmed`` or ``timed_out`` once resolved."""

    request_id: str
    priority: int
    demand_priority: int
    issued_at: float
    debit: float
    resolved_at: float | None = None
    outcome: str | None = None
    over_eviction: bool = False
    remote: bool = False  # for another replica's demand (its ledger order)

    @property
    def latency(self) -> float | None:
        """Seconds from issue to confirmation (None while outstanding)."""
        return None if self.resolved_at is None else self.resolved_at - self.issued_at


class Evictor:
    """Decision state of eviction. Counters: ``issued``, ``confirmed``, ``timed_out``,
    ``over_evictions``; gauges: ``last_target``, :meth:`pending`."""

    def __init__(self, settings: EvictionSettings) -> None:
        self._settings = settings
        self._victims: list[tuple[int, int, Item]] = []
        self._compact_at = _MIN_COMPACT
        self._outstanding: dict[str, Revocation] = {}
        self._cooling: list[tuple[float, float]] = []  # (until, debit)
        self.issued = 0
        self.confirmed = 0
        self.timed_out = 0
        self.over_evictions = 0
        self.last_target = 0.0

    def track(self, item: Item) -> None:
        """A request was dispatched; it becomes a victim candidate when its band is < 0."""
        if item.band < 0:
            heapq.heappush(self._victims, (item.band, -item.seq, item))
            if len(self._victims) > self._compact_at:
                self._compact()

    def lowest_victim(self) -> int | None:
        """Priority of the best victim, or None when nothing is evictable."""
        victims = self._victims
        while victims and not _evictable(victims[0][2]):
            heapq.heappop(victims)
        return victims[0][0] if victims else None

    def gate_open(self) -> bool:
        """Stop-and-wait: True when nothing is outstanding or cooling (as of the last
        :meth:`advance`, which the controller runs at the start of every cycle)."""
        return not self._outstanding and not self._cooling

    def pending(self) -> float:
        """Outstanding plus cooling debits (saturation units)."""
        return sum(r.debit for r in self._outstanding.values()) + sum(d for _, d in self._cooling)

    def advance(self, now: float) -> list[Revocation]:
        """Time out unconfirmed revocations and let cooled debits go; returns the timeouts.

        Cheap when idle: the controller calls it every cycle, so timeouts and cooling end on
        time even when no band is gated (``next_deadline`` never stays in the past)."""
        if not self._outstanding and not self._cooling:
            return []
        late = [
            r for r in self._outstanding.values() if now - r.issued_at >= self._settings.timeout
        ]
        out = [self._resolve(r, now, "timed_out", over=False) for r in late]
        self._cooling = [(until, d) for until, d in self._cooling if until > now]
        return out

    def choose(
        self, now: float, saturation: float, ceiling: float, demand: int, inflight: int
    ) -> list[Item]:
        """Pick victims for demand at priority ``demand`` gated by ``ceiling``."""
        self.last_target = saturation - ceiling
        pending = self.pending()
        net = self.last_target - pending
        if net < -_EPS or (abs(net) <= _EPS and pending > 0) or inflight <= 0:
            return []
        credit = saturation / inflight
        n = min(evictions_needed(max(net, 0.0), credit), self._settings.max_per_decision)
        return [self._issue(v, now, demand, credit) for v in self._pop_victims(n, demand)]

    def choose_for(self, now: float, count: int, below: int) -> list[Item]:
        """Victims for another replica's demand at priority ``below`` (its ledger order): no
        sizing and no pacing here, the ordering replica did both; no debit either, so this
        replica's own decisions are not held back by them."""
        return [
            self._issue(v, now, below, 0.0, remote=True) for v in self._pop_victims(count, below)
        ]

    def demand_of(self, request_id: str) -> int | None:
        """The demand priority an outstanding revocation was issued for, else None."""
        rev = self._outstanding.get(request_id)
        return None if rev is None else rev.demand_priority

    def confirm(self, request_id: str, now: float, *, demand_waiting: bool) -> Revocation | None:
        """The evicted stream ended; None when ``request_id`` was not outstanding."""
        rev = self._outstanding.get(request_id)
        if rev is None:
            return None
        return self._resolve(rev, now, "confirmed", over=not demand_waiting)

    def next_deadline(self) -> float | None:
        """When a timeout or a cooling expiry next changes the gate, or None."""
        times = [r.issued_at + self._settings.timeout for r in self._outstanding.values()]
        times += [until for until, _ in self._cooling]
        return min(times, default=None)

    def _pop_victims(self, n: int, demand: int) -> list[Item]:
        out: list[Item] = []
        while len(out) < n and self.lowest_victim() is not None:
            entry = heapq.heappop(self._victims)
            if entry[0] >= demand:
                heapq.heappush(self._victims, entry)
                break
            out.append(entry[2])
        return out

    def _issue(
        self, item: Item, now: float, demand: int, credit: float, *, remote: bool = False
    ) -> Item:
        item.evicted = True
        rid = item.request.request_id
        self._outstanding[rid] = Revocation(rid, item.band, demand, now, credit, remote=remote)
        self.issued += 1
        return item

    def _resolve(self, rev: Revocation, now: float, outcome: str, *, over: bool) -> Revocation:
        del self._outstanding[rev.request_id]
        if not rev.remote:  # a remote one's demand is the other replica's to judge
            self._cooling.append((now + self._settings.grace, rev.debit))
        over = over and not rev.remote
        if outcome == "confirmed":
            self.confirmed += 1
        else:
            self.timed_out += 1
        self.over_evictions += int(over)
        return Revocation(
            rev.request_id,
            rev.priority,
            rev.demand_priority,
            rev.issued_at,
            rev.debit,
            resolved_at=now,
            outcome=outcome,
            over_eviction=over,
            remote=rev.remote,
        )

    def _compact(self) -> None:
        """Drop candidates that finished or were evicted; stale entries deep in the heap are
        otherwise never popped while nothing is gated. Amortised O(1) per dispatch."""
        self._victims = [v for v in self._victims if _evictable(v[2])]
        heapq.heapify(self._victims)
        self._compact_at = max(_MIN_COMPACT, 2 * len(self._victims))


def _evictable(item: Item) -> bool:
    return item.state is ItemState.IN_FLIGHT and not item.evicted
