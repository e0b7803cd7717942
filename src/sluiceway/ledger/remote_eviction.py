"""Which other replicas to ask for evictions, and how many (pure).

A replica whose highest waiting band is held back, with no victim of its own, asks the
replicas that run requests below 0 (and below that band) to evict: lowest band first, as many
as it has waiting in that band, minus the orders it gave that are not served yet. An order
counts as served when this replica dispatches a request of the band it was for, and lapses
after ``timeout`` (the eviction timeout: an order that freed nothing, because the victim had
finished or its replica died, is given again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sluiceway.ledger.replicas import EvictionOrder, Victims

__all__ = ["RemoteEviction"]


@dataclass(slots=True)
class _Given:
    expires: float
    count: int


@dataclass(slots=True)
class RemoteEviction:
    timeout: float
    most: int = 1_000_000  # per decision
    _pending: list[_Given] = field(default_factory=list)

    @property
    def pending(self) -> int:
        return sum(g.count for g in self._pending)

    def decide(
        self, now: float, band: int, waiting: int, victims: Sequence[Victims]
    ) -> list[EvictionOrder]:
        """Orders for ``waiting`` requests of priority ``band`` held back at ``now``."""
        self._pending = [g for g in self._pending if g.expires > now]
        need = min(waiting - self.pending, self.most)
        if need <= 0:
            return []
        orders: dict[str, int] = {}
        for v in sorted(victims, key=lambda v: (v.band, v.member)):
            if need <= 0 or v.band >= min(band, 0):
                break
            take = min(v.count, need)
            orders[v.member] = orders.get(v.member, 0) + take
            need -= take
        given = sum(orders.values())
        if given:
            self._pending.append(_Given(now + self.timeout, given))
        return [EvictionOrder(m, band, n) for m, n in orders.items()]

    def served(self, count: int) -> None:
        """``count`` requests of an ordered band were dispatched: that many orders did it."""
        for given in self._pending:
            take = min(given.count, count)
            given.count -= take
            count -= take
        self._pending = [g for g in self._pending if g.count > 0]
