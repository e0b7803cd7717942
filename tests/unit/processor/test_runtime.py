"""State one processor's tasks share: the claim book the heartbeat walks, the memory of a
request generation's attempts (bounded, least recently used forgotten first), and the lease a
claim gets (the claim lease, at most a fixed margin past the request's deadline)."""

from __future__ import annotations

import json

from sluiceway.broker.base import Claim, claim_key
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import VirtualClock
from sluiceway.processor.metrics import ProcessorMetrics, QueueLabels
from sluiceway.processor.results import HttpAnswer
from sluiceway.processor.runtime import LEASE_PAST_DEADLINE, AttemptMemory, ClaimBook, Runtime
from sluiceway.processor.specs import ProcessorSpec, QueueSpec
from sluiceway.processor.work_item import WorkItem, new_owner
from sluiceway.wire import decode_envelope
from sluiceway.wire.lanes import LANES

NOW = 1_700_000_000.0


def claimed(queue: str, request_id: str) -> WorkItem:
    member = json.dumps(
        {
            "internal": {"request_queue_name": queue},
            "request_kind": "plain",
            "data": {"id": request_id, "deadline": NOW + 60},
        }
    )
    envelope = decode_envelope(member)
    owner = new_owner()
    key = claim_key(request_id, envelope.request_token)
    claim = Claim(queue, key, member, NOW + 60, owner, NOW + 30)
    spec = QueueSpec(id=queue, queue_name=queue, igw_base_url="http://gw")
    labels = QueueLabels(queue, queue, "default")
    return WorkItem(claim, envelope, spec, LANES[0], labels, owner, ingested_at=0.0)


def test_the_claim_book_counts_each_claim_once_per_queue() -> None:
    book = ClaimBook()
    a, b, c = claimed("q1", "a"), claimed("q1", "b"), claimed("q2", "c")
    for item in (a, b, c, a):
        book.add(item)
    assert len(book) == 3
    assert (book.count_for_queue("q1"), book.count_for_queue("q2")) == (2, 1)
    book.remove(a)
    book.remove(a)  # a second removal changes nothing
    assert len(book) == 2
    assert (book.count_for_queue("q1"), book.count_for_queue("elsewhere")) == (1, 0)


def test_claims_may_leave_the_book_while_it_is_walked() -> None:
    book = ClaimBook()
    for request_id in ("a", "b", "c"):
        book.add(claimed("q", request_id))
    for item in book:
        book.remove(item)
    assert len(book) == 0 and book.count_for_queue("q") == 0


def test_one_record_per_request_generation() -> None:
    memory = AttemptMemory()
    record = memory.get("r", "t1")
    record.connect_errors += 1
    record.last_answer = HttpAnswer(503, "busy")
    assert memory.get("r", "t1") is record
    assert memory.last_answer("r", "t1") == HttpAnswer(503, "busy")
    assert memory.last_answer("r", "t2") is None  # a new generation starts afresh
    memory.forget("r", "t1")
    assert memory.last_answer("r", "t1") is None
    assert memory.get("r", "t1").connect_errors == 0


def test_the_memory_forgets_the_least_recently_used_first() -> None:
    memory = AttemptMemory(capacity=2)
    for request_id in ("a", "b"):
        memory.get(request_id, "t").last_answer = HttpAnswer(500, request_id)
    memory.get("a", "t")  # used again: "b" is now the oldest
    memory.get("c", "t")
    assert memory.last_answer("b", "t") is None
    assert memory.last_answer("a", "t") == HttpAnswer(500, "a")


def test_a_lease_is_the_claim_lease_but_ends_soon_after_the_deadline() -> None:
    clock = VirtualClock(NOW)
    settings = ProcessorSpec(queues=(), claim_lease=30.0)
    rt = Runtime(MemoryBroker(), clock, settings, ProcessorMetrics())
    far = NOW + 3600
    assert rt.lease_until(far) == NOW + settings.claim_lease
    assert rt.lease_until(far, now=NOW + 5) == NOW + 5 + settings.claim_lease
    lapsed = NOW - LEASE_PAST_DEADLINE + 10
    assert rt.lease_until(lapsed) == lapsed + LEASE_PAST_DEADLINE < NOW + settings.claim_lease
