"""Helpers of the broker protocol and memory-broker inspection."""

from __future__ import annotations

import json

from sluiceway.broker.base import Broker, Entry, claim_key, retry_origin
from sluiceway.broker.memory import MemoryBroker


def test_claim_key_joins_id_and_token_with_a_nul() -> None:
    assert claim_key("req-1", "ab" * 16) == "req-1\x00" + "ab" * 16


def test_retry_origin_reads_the_origin_queue_and_deadline() -> None:
    member = json.dumps({"internal": {"request_queue_name": "team-a"}, "data": {"deadline": 99}})
    assert retry_origin(member) == ("team-a", 99.0)


def test_retry_origin_is_none_when_the_member_does_not_say() -> None:
    assert retry_origin("not json") is None
    assert retry_origin(json.dumps({"internal": {}, "data": {"deadline": 5}})) is None
    assert retry_origin(json.dumps({"internal": {"request_queue_name": "q"}, "data": {}})) is None


def test_memory_broker_is_a_broker() -> None:
    assert isinstance(MemoryBroker(), Broker)


async def test_quarantined_members_are_kept_newest_first() -> None:
    broker = MemoryBroker()
    await broker.enqueue("q", [("bad-1", 1.0), ("bad-2", 2.0)])
    for member, score in (("bad-1", 1.0), ("bad-2", 2.0)):
        assert await broker.quarantine(Entry("q", member, score))
    assert broker.invalid_entries("q") == ["bad-2", "bad-1"]
