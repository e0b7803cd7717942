"""The sources' shared HTTP session: opened on first use, the same one until closed, and a
fresh one after that."""

from __future__ import annotations

from sluiceway.signals.session import SharedSession


async def test_one_session_is_shared_until_it_is_closed() -> None:
    shared = SharedSession()
    first = shared.get()
    assert shared.get() is first and not first.closed
    await shared.aclose()
    assert first.closed
    second = shared.get()
    assert second is not first and not second.closed
    await shared.aclose()
    await shared.aclose()  # closing twice is harmless
    assert second.closed


async def test_a_session_closed_elsewhere_is_replaced() -> None:
    shared = SharedSession()
    stale = shared.get()
    await stale.close()
    fresh = shared.get()
    assert fresh is not stale and not fresh.closed
    await shared.aclose()
