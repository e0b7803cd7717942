"""The broker conformance suite: what every ``Broker`` must do, whatever stores it.

Use it by subclassing :class:`BrokerConformance` in a ``test_*.py`` module and providing an
async ``broker`` fixture that yields a fresh, empty broker per test::

    class TestMemoryBroker(BrokerConformance):
        @pytest.fixture
        async def broker(self) -> AsyncIterator[Broker]:
            b = MemoryBroker()
            yield b
            await b.aclose()

Times are fixed scaled instants passed in, as the protocol requires; nothing here sleeps
except the bounded ``wait_for_work`` / ``pop_result`` timeouts (wall seconds).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from sluiceway.broker.base import (
    ActiveMarker,
    Broker,
    Claim,
    ClaimAsk,
    Entry,
    RenewOutcome,
    ResultWrite,
    claim_key,
)

NOW = 1_700_000_000.0
LEASE = 300.0
QUEUE = "team-batch"
RESULTS = "results-list"


def member(
    request_id: str, *, deadline: float = NOW + 600, queue: str = QUEUE, token: str = ""
) -> str:
    """A minimal envelope member, as producers write it."""
    internal = {"request_queue_name": queue, "request_token": token or request_id.ljust(32, "0")}
    data = {"id": request_id, "created": NOW, "deadline": deadline, "payload": {}}
    return json.dumps({"internal": internal, "request_kind": "plain", "data": data})


def token_of(request_id: str) -> str:
    return request_id.ljust(32, "0")


def result_for(request_id: str, *, token: str = "", destination: str = RESULTS) -> ResultWrite:
    record = json.dumps({"id": request_id, "status_code": 200, "payload": "ok"})
    return ResultWrite(destination, record, request_id, token or token_of(request_id))


async def put(broker: Broker, *ids_and_scores: tuple[str, float], queue: str = QUEUE) -> None:
    entries = [(member(i, deadline=s, queue=queue), s) for i, s in ids_and_scores]
    assert await broker.enqueue(queue, entries) == len(entries)


async def take(broker: Broker, entry: Entry, owner: str = "a" * 16, lease: float = LEASE) -> Claim:
    request_id = json.loads(entry.member)["data"]["id"]
    claim = await broker.claim(
        entry, key=claim_key(request_id, token_of(request_id)), owner=owner, lease_until=NOW + lease
    )
    assert claim is not None
    return claim


def ask(entry: Entry, owner: str = "a" * 16, lease: float = LEASE) -> ClaimAsk:
    doc = json.loads(entry.member)
    request_id, token = doc["data"]["id"], doc["internal"]["request_token"]
    return ClaimAsk(entry, request_id, token, owner, NOW + lease)


def ids(entries: list[Entry]) -> list[str]:
    return [json.loads(e.member)["data"]["id"] for e in entries]


class BrokerConformance:
    """Subclass with a ``broker`` fixture; every test starts from an empty broker."""

    # -- peek and claim -------------------------------------------------------------------

    async def test_peek_orders_by_score_then_member_and_removes_nothing(
        self, broker: Broker
    ) -> None:
        await put(broker, ("c", NOW + 30), ("b", NOW + 10), ("a", NOW + 30))
        assert ids(await broker.peek(QUEUE, 10)) == ["b", "a", "c"]
        assert ids(await broker.peek(QUEUE, 1, offset=1)) == ["a"]
        assert await broker.backlog(QUEUE) == 3

    async def test_peek_of_unknown_queue_is_empty(self, broker: Broker) -> None:
        assert await broker.peek("nowhere", 5) == []
        assert await broker.backlog("nowhere") == 0

    async def test_scores_are_kept_exactly(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 0.25))
        (entry,) = await broker.peek(QUEUE, 1)
        assert entry.score == pytest.approx(NOW + 0.25, abs=1e-6)

    async def test_claim_takes_the_entry_out_of_pending_once(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 10))
        (entry,) = await broker.peek(QUEUE, 1)
        claim = await take(broker, entry)
        assert claim.queue == QUEUE and claim.member == entry.member
        assert await broker.backlog(QUEUE) == 0
        again = await broker.claim(entry, key=claim.key, owner="b" * 16, lease_until=NOW + 5)
        assert again is None

    async def test_a_claimed_generation_is_not_claimed_twice(self, broker: Broker) -> None:
        # Two members of one generation (same id and token, e.g. a re-publish with another
        # deadline): while one is claimed, the other stays pending and the claim is untouched.
        first, second = member("a", deadline=NOW + 10), member("a", deadline=NOW + 20)
        await broker.enqueue(QUEUE, [(first, NOW + 10), (second, NOW + 20)])
        head, tail = await broker.peek(QUEUE, 2)
        claim = await take(broker, head)
        again = await broker.claim(tail, key=claim.key, owner="b" * 16, lease_until=NOW + 5)
        assert again is None
        (outcome,) = await broker.claim_many([ask(tail, owner="c" * 16)])
        assert outcome.claim is None
        assert [e.member for e in await broker.peek(QUEUE, 5)] == [second]
        assert await broker.renew(claim, lease_until=NOW + 9) is RenewOutcome.RENEWED
        assert await broker.ack(claim, result_for("a"))

    async def test_concurrent_claims_have_one_winner(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 10))
        (entry,) = await broker.peek(QUEUE, 1)
        key = claim_key("a", token_of("a"))
        owners = [f"{i:016x}" for i in range(8)]
        claims = await asyncio.gather(
            *(broker.claim(entry, key=key, owner=o, lease_until=NOW + 60) for o in owners)
        )
        assert sum(c is not None for c in claims) == 1

    async def test_claim_many_claims_a_batch_in_order(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 1), ("b", NOW + 2), ("c", NOW + 3))
        entries = await broker.peek(QUEUE, 3)
        await take(broker, entries[1], owner="b" * 16)  # another consumer won "b"
        outcomes = await broker.claim_many([ask(e, lease=60 + i) for i, e in enumerate(entries)])
        assert [o.claim is not None for o in outcomes] == [True, False, True]
        assert not any(o.cancelled for o in outcomes)
        first, _, third = (o.claim for o in outcomes)
        assert first is not None and third is not None
        assert (first.member, first.score, first.lease_until) == (
            entries[0].member, entries[0].score, NOW + 60,
        )  # fmt: skip
        assert third.key == claim_key("c", token_of("c")) and third.lease_until == NOW + 62
        assert await broker.backlog(QUEUE) == 0
        assert await broker.ack(third, result_for("c"))
        assert await broker.reclaim_expired(QUEUE, NOW + 61, 10) == 1  # "a" only
        assert ids(await broker.peek(QUEUE, 5)) == ["a"]

    async def test_claim_many_flags_cancelled_generations_and_still_claims_them(
        self, broker: Broker
    ) -> None:
        old, new = "1" * 32, "2" * 32
        markers = [ActiveMarker("a", old, 600), ActiveMarker("b", new, 600)]
        rows = [(member("a", token=old), NOW + 1), (member("b", token=new), NOW + 2)]
        await broker.enqueue(QUEUE, rows, markers=markers)
        assert await broker.cancel("a", expire_after=600)
        outcomes = await broker.claim_many([ask(e) for e in await broker.peek(QUEUE, 2)])
        assert [o.cancelled for o in outcomes] == [True, False]
        cancelled = outcomes[0].claim
        assert cancelled is not None and await broker.backlog(QUEUE) == 0
        assert await broker.ack(cancelled, result_for("a", token=old))
        assert not await broker.is_cancelled("a", old)

    async def test_concurrent_claim_many_gives_each_entry_one_winner(self, broker: Broker) -> None:
        await put(broker, *((f"r{i}", NOW + i) for i in range(6)))
        entries = await broker.peek(QUEUE, 6)
        batches = await asyncio.gather(
            *(broker.claim_many([ask(e, owner=f"{o:016x}") for e in entries]) for o in range(4))
        )
        for column in zip(*batches, strict=True):
            assert sum(o.claim is not None for o in column) == 1
        assert await broker.backlog(QUEUE) == 0

    async def test_claim_many_of_nothing_is_empty(self, broker: Broker) -> None:
        assert await broker.claim_many([]) == []

    # -- ack, fencing, renew --------------------------------------------------------------

    async def test_ack_pushes_the_result_and_drops_the_claim(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 10))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        assert await broker.ack(claim, result_for("a"))
        assert await broker.result_count(RESULTS) == 1
        record = await broker.pop_result(RESULTS, 0)
        assert record is not None and json.loads(record)["id"] == "a"
        assert await broker.renew(claim, lease_until=NOW + 99) is RenewOutcome.MISSING
        assert await broker.ack(claim, result_for("a")) is False
        assert await broker.result_count(RESULTS) == 0

    async def test_results_come_out_oldest_first(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 1), ("b", NOW + 2))
        for entry in await broker.peek(QUEUE, 2):
            request_id = json.loads(entry.member)["data"]["id"]
            assert await broker.ack(await take(broker, entry), result_for(request_id))
        first, second = await broker.pop_result(RESULTS, 0), await broker.pop_result(RESULTS, 0)
        assert [json.loads(r or "")["id"] for r in (first, second)] == ["a", "b"]

    async def test_result_expiry_is_accepted(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 1))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        write = ResultWrite("per-request:a", '{"id": "a"}', "a", token_of("a"), expire_after=60.0)
        assert await broker.ack(claim, write)
        assert await broker.pop_result("per-request:a", 0) == '{"id": "a"}'

    async def test_stale_owner_is_fenced_after_reclaim(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 10))
        stale = await take(broker, (await broker.peek(QUEUE, 1))[0], owner="a" * 16, lease=5)
        assert await broker.reclaim_expired(QUEUE, NOW + 6, 100) == 1
        fresh = await take(broker, (await broker.peek(QUEUE, 1))[0], owner="b" * 16)
        assert await broker.renew(stale, lease_until=NOW + 99) is RenewOutcome.STOLEN
        assert await broker.ack(stale, result_for("a")) is False
        assert await broker.release(stale) is False
        assert await broker.retry_after(stale, member=stale.member, due=NOW) is False
        assert await broker.result_count(RESULTS) == 0
        assert await broker.ack(fresh, result_for("a"))
        assert await broker.result_count(RESULTS) == 1

    async def test_renew_extends_the_lease(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 10))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0], lease=5)
        assert await broker.renew(claim, lease_until=NOW + 50) is RenewOutcome.RENEWED
        assert await broker.reclaim_expired(QUEUE, NOW + 20, 100) == 0
        assert await broker.reclaim_expired(QUEUE, NOW + 51, 100) == 1

    # -- release, reclaim ------------------------------------------------------------------

    async def test_release_restores_the_original_score(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 10), ("b", NOW + 20))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        assert ids(await broker.peek(QUEUE, 5)) == ["b"]
        assert await broker.release(claim)
        entries = await broker.peek(QUEUE, 5)
        assert ids(entries) == ["a", "b"] and entries[0].score == pytest.approx(NOW + 10, abs=1e-3)
        assert await broker.release(claim) is False

    async def test_reclaim_returns_only_expired_claims_up_to_the_limit(
        self, broker: Broker
    ) -> None:
        await put(broker, ("a", NOW + 1), ("b", NOW + 2), ("c", NOW + 3))
        entries = await broker.peek(QUEUE, 3)
        await take(broker, entries[0], lease=5)
        await take(broker, entries[1], lease=6)
        await take(broker, entries[2], lease=100)
        assert await broker.reclaim_expired(QUEUE, NOW + 10, 1) == 1
        assert await broker.reclaim_expired(QUEUE, NOW + 10, 100) == 1
        back = await broker.peek(QUEUE, 5)
        assert ids(back) == ["a", "b"]
        assert [e.score for e in back] == pytest.approx([NOW + 1, NOW + 2], abs=1e-3)

    # -- retries ---------------------------------------------------------------------------

    async def test_retry_waits_out_its_backoff_then_reenters_at_its_deadline(
        self, broker: Broker
    ) -> None:
        await put(broker, ("a", NOW + 100), ("b", NOW + 200))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        retried = member("a", deadline=NOW + 100)
        assert await broker.retry_after(claim, member=retried, due=NOW + 30)
        assert ids(await broker.peek(QUEUE, 5)) == ["b"]
        assert await broker.next_retry_due() == pytest.approx(NOW + 30, abs=1e-3)
        assert await broker.move_due_retries(NOW + 29, 10, fallback_queue="other") == 0
        assert await broker.move_due_retries(NOW + 30, 10, fallback_queue="other") == 1
        entries = await broker.peek(QUEUE, 5)
        assert ids(entries) == ["a", "b"] and entries[0].score == pytest.approx(NOW + 100, abs=1e-3)
        assert await broker.next_retry_due() is None
        assert await broker.renew(claim, lease_until=NOW + 9) is RenewOutcome.MISSING

    async def test_retry_without_origin_goes_to_the_fallback_queue(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 100))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        raw = json.dumps({"internal": {}, "request_kind": "plain", "data": {"id": "a"}})
        assert await broker.retry_after(claim, member=raw, due=NOW + 1)
        assert await broker.move_due_retries(NOW + 5, 10, fallback_queue="fallback") == 1
        (moved,) = await broker.peek("fallback", 5)
        assert moved.member == raw and moved.score == pytest.approx(NOW + 5, abs=1e-3)

    async def test_concurrent_movers_move_each_retry_once(self, broker: Broker) -> None:
        await put(broker, *((f"r{i}", NOW + 50 + i) for i in range(6)))
        for entry in await broker.peek(QUEUE, 6):
            claim = await take(broker, entry)
            assert await broker.retry_after(claim, member=entry.member, due=NOW + 1)
        moved = await asyncio.gather(
            *(broker.move_due_retries(NOW + 2, 100, fallback_queue="x") for _ in range(4))
        )
        assert sum(moved) == 6
        assert await broker.backlog(QUEUE) == 6

    async def test_move_respects_the_limit(self, broker: Broker) -> None:
        await put(broker, *((f"r{i}", NOW + 50) for i in range(3)))
        for entry in await broker.peek(QUEUE, 3):
            assert await broker.retry_after(await take(broker, entry), member=entry.member, due=NOW)
        assert await broker.move_due_retries(NOW, 2, fallback_queue="x") == 2
        assert await broker.move_due_retries(NOW, 2, fallback_queue="x") == 1

    # -- bad entries, depth ---------------------------------------------------------------

    async def test_quarantine_removes_the_member_once(self, broker: Broker) -> None:
        await broker.enqueue(QUEUE, [("not json", NOW + 1)])
        (entry,) = await broker.peek(QUEUE, 1)
        assert await broker.quarantine(entry)
        assert await broker.backlog(QUEUE) == 0
        assert await broker.quarantine(entry) is False

    async def test_count_due_counts_scores_at_or_below_each_limit(self, broker: Broker) -> None:
        await put(broker, ("a", NOW), ("b", NOW + 5), ("c", NOW + 60))
        assert await broker.count_due(QUEUE, [NOW - 1, NOW, NOW + 5, NOW + 3600]) == [0, 1, 2, 3]
        assert await broker.count_due("nowhere", [NOW]) == [0]

    async def test_enqueue_of_an_existing_member_does_not_duplicate(self, broker: Broker) -> None:
        entry = (member("a"), NOW + 1)
        assert await broker.enqueue(QUEUE, [entry]) == 1
        assert await broker.enqueue(QUEUE, [entry]) == 0
        assert await broker.backlog(QUEUE) == 1

    # -- cancellation markers --------------------------------------------------------------

    async def test_cancel_marks_the_current_generation_only(self, broker: Broker) -> None:
        marker = ActiveMarker("a", "1" * 32, expire_after=600)
        await broker.enqueue(QUEUE, [(member("a", token="1" * 32), NOW + 9)], markers=[marker])
        assert await broker.cancel("a", expire_after=3600)
        assert await broker.is_cancelled("a", "1" * 32)
        assert not await broker.is_cancelled("a", "2" * 32)
        newer = ActiveMarker("a", "2" * 32, expire_after=600)
        await broker.enqueue(QUEUE, [(member("a", token="2" * 32), NOW + 9)], markers=[newer])
        assert not await broker.is_cancelled("a", "1" * 32)
        assert not await broker.is_cancelled("a", "2" * 32)

    async def test_cancel_of_an_unknown_request_is_a_no_op(self, broker: Broker) -> None:
        assert await broker.cancel("ghost", expire_after=60) is False
        assert not await broker.is_cancelled("ghost", "0" * 32)

    async def test_ack_clears_markers_of_its_own_generation_only(self, broker: Broker) -> None:
        old, new = "1" * 32, "2" * 32
        await broker.enqueue(
            QUEUE, [(member("a", token=old), NOW + 9)], markers=[ActiveMarker("a", old, 600)]
        )
        (entry,) = await broker.peek(QUEUE, 1)
        claim = await broker.claim(
            entry, key=claim_key("a", old), owner="o" * 16, lease_until=NOW + 9
        )
        assert claim is not None
        await broker.enqueue(
            QUEUE, [(member("a", token=new), NOW + 9)], markers=[ActiveMarker("a", new, 600)]
        )
        assert await broker.ack(claim, result_for("a", token=old))
        assert await broker.cancel("a", expire_after=60)
        assert await broker.is_cancelled("a", new)
        (entry,) = await broker.peek(QUEUE, 1)
        claim = await broker.claim(
            entry, key=claim_key("a", new), owner="o" * 16, lease_until=NOW + 9
        )
        assert claim is not None
        assert await broker.ack(claim, result_for("a", token=new))
        assert not await broker.is_cancelled("a", new)
        assert await broker.cancel("a", expire_after=60) is False

    # -- waiting ---------------------------------------------------------------------------

    async def test_wait_for_work_wakes_on_enqueue(self, broker: Broker) -> None:
        waiter = asyncio.create_task(broker.wait_for_work([QUEUE, "other"], block_for=10.0))
        await asyncio.sleep(0.05)
        await put(broker, ("a", NOW + 1))
        assert await asyncio.wait_for(waiter, 5.0) is True

    async def test_wait_for_work_times_out(self, broker: Broker) -> None:
        assert await broker.wait_for_work([QUEUE], block_for=0.05) is False

    async def test_pop_result_blocks_until_a_result_arrives(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 1))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        popper = asyncio.create_task(broker.pop_result(RESULTS, 10.0))
        await asyncio.sleep(0.05)
        assert await broker.ack(claim, result_for("a"))
        record = await asyncio.wait_for(popper, 5.0)
        assert record is not None and json.loads(record)["id"] == "a"

    async def test_pop_result_times_out_with_none(self, broker: Broker) -> None:
        assert await broker.pop_result(RESULTS, 0.05) is None
        assert await broker.pop_result(RESULTS, 0) is None

    async def test_ping_succeeds(self, broker: Broker) -> None:
        await broker.ping()

    # -- result mailboxes ------------------------------------------------------------------

    async def test_peek_result_reads_without_taking(self, broker: Broker) -> None:
        assert await broker.peek_result("mailbox:a") is None
        await answer(broker, "a", destination="mailbox:a")
        for _ in range(2):
            record = await broker.peek_result("mailbox:a")
            assert record is not None and json.loads(record)["id"] == "a"
        assert await broker.result_count("mailbox:a") == 1

    async def test_wait_for_result_sees_a_result_pushed_while_waiting(self, broker: Broker) -> None:
        await put(broker, ("a", NOW + 1))
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])

        async def wait() -> str:
            while (record := await broker.peek_result("mailbox:a")) is None:
                await broker.wait_for_result("mailbox:a", 0.2)
            return record

        waiter = asyncio.create_task(wait())
        await asyncio.sleep(0.05)
        assert await broker.ack(claim, result_for("a", destination="mailbox:a"))
        assert json.loads(await asyncio.wait_for(waiter, 5.0))["id"] == "a"

    async def test_wait_for_result_times_out(self, broker: Broker) -> None:
        assert await broker.wait_for_result("mailbox:none", 0.05) is False

    async def test_expire_result_zero_deletes_and_positive_keeps_for_now(
        self, broker: Broker
    ) -> None:
        await answer(broker, "a", destination="mailbox:a")
        await broker.expire_result("mailbox:a", 60.0)
        assert await broker.peek_result("mailbox:a") is not None
        await broker.expire_result("mailbox:a", 0)
        assert await broker.peek_result("mailbox:a") is None
        await broker.expire_result("mailbox:none", 0)  # unknown: a no-op

    async def test_a_shortened_result_is_gone_after_its_time(self, broker: Broker) -> None:
        await answer(broker, "a", destination="mailbox:a")
        await broker.expire_result("mailbox:a", 0.05)
        for _ in range(100):  # wall-clock expiry: bounded look, no fixed sleep
            if await broker.peek_result("mailbox:a") is None:
                break
            await asyncio.sleep(0.02)
        assert await broker.peek_result("mailbox:a") is None

    async def test_is_pending_until_answered(self, broker: Broker) -> None:
        assert not await broker.is_pending("a")
        await broker.enqueue(
            QUEUE, [(member("a"), NOW + 9)], markers=[ActiveMarker("a", token_of("a"), 600)]
        )
        assert await broker.is_pending("a")
        claim = await take(broker, (await broker.peek(QUEUE, 1))[0])
        assert await broker.is_pending("a")
        assert await broker.ack(claim, result_for("a"))
        assert not await broker.is_pending("a")

    async def test_revive_withdraws_a_cancellation_of_the_current_generation(
        self, broker: Broker
    ) -> None:
        assert not await broker.revive("a")
        await broker.enqueue(
            QUEUE, [(member("a"), NOW + 9)], markers=[ActiveMarker("a", token_of("a"), 600)]
        )
        assert not await broker.revive("a")  # not cancelled: nothing to withdraw
        assert await broker.cancel("a", expire_after=600)
        assert await broker.is_cancelled("a", token_of("a"))
        assert await broker.revive("a")
        assert not await broker.is_cancelled("a", token_of("a"))
        assert await broker.is_pending("a")


async def answer(broker: Broker, request_id: str, *, destination: str) -> None:
    """Queue, claim and ack one request with its result pushed to ``destination``."""
    await put(broker, (request_id, NOW + 1))
    (entry,) = await broker.peek(QUEUE, 1)
    claim = await take(broker, entry)
    assert await broker.ack(claim, result_for(request_id, destination=destination))
