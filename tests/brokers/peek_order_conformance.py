"""The peek orders on every broker that keeps a whole backlog: ``LATEST_DEADLINE`` is the exact
reverse of ``EARLIEST_DEADLINE`` (ties too), offsets page through either order, and claims,
releases and retries are the same whichever order found the entry.

Subclass :class:`PeekOrderConformance` beside :class:`~brokers.conformance.BrokerConformance`
(it uses the same ``broker`` fixture). Pub/Sub ignores the order and is tested on its own.
"""

from __future__ import annotations

from sluiceway.broker.base import Broker
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, LATEST_DEADLINE

from .conformance import NOW, QUEUE, ids, put, take

# Two ties at +30: members of equal score come in member order, reversed by LATEST_DEADLINE.
BACKLOG = (("c", NOW + 30), ("b", NOW + 10), ("a", NOW + 30), ("d", NOW + 20))
EARLIEST = ["b", "d", "a", "c"]


class PeekOrderConformance:
    """Every test starts from an empty broker."""

    async def test_latest_deadline_is_the_exact_reverse_of_the_default(
        self, broker: Broker
    ) -> None:
        await put(broker, *BACKLOG)
        assert ids(await broker.peek(QUEUE, 10)) == EARLIEST
        assert ids(await broker.peek(QUEUE, 10, order=EARLIEST_DEADLINE)) == EARLIEST
        assert ids(await broker.peek(QUEUE, 10, order=LATEST_DEADLINE)) == EARLIEST[::-1]
        assert await broker.backlog(QUEUE) == 4

    async def test_offsets_page_through_either_order(self, broker: Broker) -> None:
        await put(broker, *BACKLOG)
        for order, expected in ((EARLIEST_DEADLINE, EARLIEST), (LATEST_DEADLINE, EARLIEST[::-1])):
            pages = [ids(await broker.peek(QUEUE, 3, offset=o, order=order)) for o in (0, 3, 4)]
            assert pages == [expected[:3], expected[3:], []], order
            assert ids(await broker.peek(QUEUE, 2, offset=1, order=order)) == expected[1:3]

    async def test_an_unknown_queue_is_empty_in_either_order(self, broker: Broker) -> None:
        assert await broker.peek("nowhere", 5, order=LATEST_DEADLINE) == []
        assert await broker.peek("nowhere", 5, offset=3, order=LATEST_DEADLINE) == []

    async def test_a_released_entry_returns_to_its_place_in_the_reverse_order(
        self, broker: Broker
    ) -> None:
        await put(broker, *BACKLOG)
        (newest,) = await broker.peek(QUEUE, 1, order=LATEST_DEADLINE)
        claim = await take(broker, newest)
        assert ids(await broker.peek(QUEUE, 10, order=LATEST_DEADLINE)) == ["a", "d", "b"]
        assert await broker.release(claim)
        assert ids(await broker.peek(QUEUE, 10, order=LATEST_DEADLINE)) == EARLIEST[::-1]

    async def test_a_retry_waits_out_its_backoff_and_reenters_at_its_deadline(
        self, broker: Broker
    ) -> None:
        await put(broker, *BACKLOG)
        (newest,) = await broker.peek(QUEUE, 1, order=LATEST_DEADLINE)
        claim = await take(broker, newest)
        assert await broker.retry_after(claim, member=claim.member, due=NOW + 5)
        assert await broker.move_due_retries(NOW + 4, 10, fallback_queue="fallback") == 0
        assert ids(await broker.peek(QUEUE, 10, order=LATEST_DEADLINE)) == ["a", "d", "b"]
        assert await broker.move_due_retries(NOW + 5, 10, fallback_queue="fallback") == 1
        (back,) = await broker.peek(QUEUE, 1, order=LATEST_DEADLINE)
        assert back.member == newest.member and back.score == newest.score
