"""Lease waiters: in order within a band, higher bands first, cancelled ones skipped."""

from __future__ import annotations

from sluiceway.ledger.waiters import LeaseWaiters


async def test_grants_per_band_oldest_first_skipping_the_cancelled() -> None:
    w = LeaseWaiters()
    a, b, c = w.add(0), w.add(0), w.add(0)
    hi = w.add(100)
    a.cancel()
    assert w.counts() == {0: 2, 100: 1}
    assert w.grant({0: 1}) == {0: 1}
    assert b.done() and not c.done() and not hi.done()
    assert len(w) == 2


async def test_grant_while_serves_higher_bands_first() -> None:
    w = LeaseWaiters()
    low, high = w.add(-10), w.add(100)
    room = [1]

    def allowed(band: int) -> bool:
        room[0] -= 1
        return room[0] >= 0

    assert w.grant_while(allowed) == {100: 1}
    assert high.done() and not low.done()
    w.cancel_all()
    assert low.cancelled() and len(w) == 0
