"""Crash injection and competing consumers, on the memory, sqlite and redis brokers.

A consumer's life for one entry is peek -> claim -> renew -> ack. A crash after any step must
leave every request with exactly one result once a survivor has reclaimed expired claims, and a
consumer that was only paused (a zombie) is fenced when it wakes up and acks late.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from sluiceway.broker.base import Broker, BrokerOptions, Claim, Entry, ResultWrite, claim_key
from sluiceway.broker.memory import open_memory_broker
from sluiceway.broker.redis import open_redis_broker
from sluiceway.broker.sqlite import open_sqlite_broker

NOW = 1_700_000_000.0
LEASE = 30.0
QUEUE = "team-batch"
RESULTS = "results-list"
STEPS = ("peek", "claim", "renew", "ack")

Opener = Callable[[], Awaitable[Broker]]


def _member(request_id: str) -> str:
    internal = {"request_queue_name": QUEUE, "request_token": request_id.ljust(32, "0")}
    data = {"id": request_id, "deadline": NOW + 600, "payload": {}}
    return json.dumps({"internal": internal, "request_kind": "plain", "data": data})


def _id(entry: Entry | Claim) -> str:
    return str(json.loads(entry.member)["data"]["id"])


def _result(request_id: str) -> ResultWrite:
    record = json.dumps({"id": request_id, "status_code": 200, "payload": "ok"})
    return ResultWrite(RESULTS, record, request_id, request_id.ljust(32, "0"))


async def _claim(broker: Broker, entry: Entry, owner: str, now: float) -> Claim | None:
    key = claim_key(_id(entry), _id(entry).ljust(32, "0"))
    return await broker.claim(entry, key=key, owner=owner, lease_until=now + LEASE)


async def _consume_all(broker: Broker, owner: str, now: float) -> int:
    """Claim and ack every pending entry; returns how many this consumer answered."""
    done = 0
    while entries := await broker.peek(QUEUE, 10):
        for entry in entries:
            claim = await _claim(broker, entry, owner, now)
            if claim is not None and await broker.ack(claim, _result(_id(entry))):
                done += 1
    return done


async def _results(broker: Broker) -> list[str]:
    out = []
    while (record := await broker.pop_result(RESULTS, 0)) is not None:
        out.append(json.loads(record)["id"])
    return sorted(out)


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.redis)],
)
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens brokers on one shared store (memory: the same instance, as it cannot reopen)."""
    opened: list[Broker] = []
    if request.param == "memory":
        shared = await open_memory_broker(BrokerOptions())
        opened.append(shared)

        async def open_shared() -> Broker:
            return shared

        yield open_shared
    else:
        url = (
            str(tmp_path / "q.db")
            if request.param == "sqlite"
            else request.getfixturevalue("redis_server").url
        )
        factory = open_sqlite_broker if request.param == "sqlite" else open_redis_broker

        async def open_new() -> Broker:
            broker = await factory(BrokerOptions(url=url))
            opened.append(broker)
            return broker

        yield open_new
    for broker in opened:
        await broker.aclose()


async def _crash_after(broker: Broker, step: str) -> Claim | None:
    """Run one consumer over the head entry up to and including ``step``, then stop."""
    (entry,) = await broker.peek(QUEUE, 1)
    if step == "peek":
        return None
    claim = await _claim(broker, entry, "dead" * 4, NOW)
    assert claim is not None
    if step in ("renew", "ack"):
        await broker.renew(claim, lease_until=NOW + LEASE)
    if step == "ack":
        assert await broker.ack(claim, _result(_id(claim)))
    return claim


@pytest.mark.parametrize("step", STEPS)
async def test_a_crash_after_any_step_loses_nothing_and_duplicates_nothing(
    opener: Opener, step: str
) -> None:
    producer = await opener()
    await producer.enqueue(QUEUE, [(_member(f"r{i}"), NOW + i) for i in range(5)])
    zombie_claim = await _crash_after(await opener(), step)
    survivor = await opener()
    later = NOW + LEASE + 1
    assert await survivor.reclaim_expired(QUEUE, later, 100) == (1 if step in STEPS[1:3] else 0)
    await _consume_all(survivor, "live" * 4, later)
    if zombie_claim is not None and step != "ack":
        assert await survivor.ack(zombie_claim, _result(_id(zombie_claim))) is False
    assert await _results(survivor) == [f"r{i}" for i in range(5)]
    assert await survivor.backlog(QUEUE) == 0
    assert await survivor.reclaim_expired(QUEUE, later + 10 * LEASE, 100) == 0


async def test_two_competing_consumers_answer_each_entry_once(opener: Opener) -> None:
    producer = await opener()
    count = 60
    await producer.enqueue(QUEUE, [(_member(f"r{i:03d}"), NOW + i) for i in range(count)])
    first, second = await opener(), await opener()
    done = await asyncio.gather(
        _consume_all(first, "a" * 16, NOW), _consume_all(second, "b" * 16, NOW)
    )
    assert sum(done) == count
    assert await _results(producer) == [f"r{i:03d}" for i in range(count)]


async def test_a_paused_owner_is_fenced_after_its_entry_was_redelivered(opener: Opener) -> None:
    producer = await opener()
    await producer.enqueue(QUEUE, [(_member("r0"), NOW)])
    paused = await opener()
    (entry,) = await paused.peek(QUEUE, 1)
    stale = await _claim(paused, entry, "p" * 16, NOW)
    assert stale is not None
    survivor = await opener()
    assert await survivor.reclaim_expired(QUEUE, NOW + LEASE + 1, 10) == 1
    assert await _consume_all(survivor, "s" * 16, NOW + LEASE + 1) == 1
    assert await paused.ack(stale, _result("r0")) is False
    assert await paused.release(stale) is False
    assert await _results(producer) == ["r0"]
