"""What ``status`` and ``results`` read, on every broker: counts, result lists, and the
``<queue>:invalid:info`` side hash written by ``quarantine``.

Subclass :class:`InspectConformance` with a ``broker`` fixture and an ``invalid_reasons``
reader (the side hash as the backend stores it).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluiceway.broker.base import Broker, Entry
from sluiceway.broker.inspect import Inspectable, QueueCounts
from sluiceway.broker.keys import member_digest

from .conformance import NOW, QUEUE, RESULTS, put, result_for, take


class InspectConformance:
    """Every test starts from an empty broker."""

    async def invalid_reasons(self, broker: Any, queue: str) -> dict[str, str]:
        raise NotImplementedError

    async def test_counts_cover_pending_claimed_retrying_invalid_and_the_oldest_deadline(
        self, broker: Broker
    ) -> None:
        assert isinstance(broker, Inspectable)
        await put(broker, ("a", NOW + 10), ("b", NOW + 20), ("c", NOW + 30), ("d", NOW + 40))
        head, second, third = await broker.peek(QUEUE, 3)
        await take(broker, head)
        parked = await take(broker, second, owner="b" * 16)
        assert await broker.retry_after(parked, member=parked.member, due=NOW + 5)
        bad = Entry(QUEUE, "{not json", NOW + 1)
        await broker.enqueue(QUEUE, [(bad.member, bad.score)])
        assert await broker.quarantine(bad, reason="not JSON", now=NOW)
        (counts, empty) = await broker.queue_counts([QUEUE, "elsewhere"])
        assert counts == QueueCounts(QUEUE, 2, 1, 1, 1, pytest.approx(NOW + 30))
        assert empty == QueueCounts("elsewhere", 0, 0, 0, 0, None)
        assert third.score == pytest.approx(NOW + 30)

    async def test_quarantine_records_why_under_the_member_digest(self, broker: Broker) -> None:
        bad = Entry(QUEUE, "{not json", NOW + 1)
        await broker.enqueue(QUEUE, [(bad.member, bad.score)])
        assert await broker.quarantine(bad, reason="not JSON", now=NOW)
        reasons = await self.invalid_reasons(broker, QUEUE)
        assert list(reasons) == [member_digest(bad.member)]
        assert json.loads(reasons[member_digest(bad.member)]) == {"reason": "not JSON", "at": NOW}

    async def test_peeking_results_leaves_them_oldest_first(self, broker: Broker) -> None:
        assert isinstance(broker, Inspectable)
        await put(broker, ("a", NOW + 10), ("b", NOW + 20))
        for entry in await broker.peek(QUEUE, 2):
            claim = await take(broker, entry)
            request_id = json.loads(entry.member)["data"]["id"]
            assert await broker.ack(claim, result_for(request_id))
        records = await broker.peek_results(RESULTS, 10)
        assert [json.loads(r)["id"] for r in records] == ["a", "b"]
        assert await broker.peek_results(RESULTS, 1) == records[:1]
        assert await broker.result_count(RESULTS) == 2
        assert await broker.remove_result(RESULTS, records[1])
        assert not await broker.remove_result(RESULTS, records[1])
        assert await broker.peek_results(RESULTS, 10) == records[:1]
        assert await broker.peek_results("nowhere", 10) == []
