"""Cancelled requests at ingest: answered whether the queue gates admit, hold or drop them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from sluiceway.broker.base import ClaimAsk, ClaimOutcome, Entry
from sluiceway.broker.memory import MemoryBroker
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, PeekOrder
from sluiceway.clock import VirtualClock
from sluiceway.gates.base import Decision, GateRequest, Holdings, Verdict
from sluiceway.processor.ingest import QueueIngest
from sluiceway.processor.metrics import ProcessorMetrics
from sluiceway.processor.producer import Producer, request
from sluiceway.processor.ready_buffer import ReadyBuffer
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.wire import ErrorCode


class HoldingGate:
    """A queue gate that holds every request (or drops it), counting its calls."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.calls = 0

    async def budget(self, now: float) -> float:
        return 1.0

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        self.calls += 1
        return Decision(self.verdict)

    async def aclose(self) -> None:
        pass


NOW = 1_700_000_000.0
QUEUE = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw", pool_id="p")


async def _ingest_with(gate: HoldingGate) -> tuple[QueueIngest, MemoryBroker, Producer]:
    broker, clock = MemoryBroker(), VirtualClock(NOW)
    settings = ProcessorSpec(queues=[QUEUE], pools=(PoolSpec(id="p", workers=2),))
    rt = Runtime(broker=broker, clock=clock, settings=settings, metrics=ProcessorMetrics())
    pool = ReadyBuffer(settings.pools[0], ordering="tier-priority", queues=1)
    producer = Producer(broker, queue="q", result_queue="out", clock=clock)
    return QueueIngest(rt, QUEUE, pool, gate), broker, producer


@pytest.mark.parametrize("verdict", [Verdict.WAIT, Verdict.DROP])
async def test_a_cancelled_request_held_by_a_queue_gate_is_answered_cancelled(
    verdict: Verdict,
) -> None:
    gate = HoldingGate(verdict)
    ingest, broker, producer = await _ingest_with(gate)
    held = await producer.submit(request("held", {}, deadline=NOW + 60))
    cancelled = await producer.submit(request("gone", {}, deadline=NOW + 90))
    await producer.cancel(["gone"])
    assert await ingest.poll_once() == 0
    results = [r async for r in producer.results(block_for=0.01, follow=False)]
    assert [(r.id, r.error_code) for r in results][-1] == ("gone", str(ErrorCode.CANCELLED))
    assert results[-1].request_token == cancelled.request_token
    assert await broker.backlog("q") == (1 if verdict is Verdict.WAIT else 0)
    assert gate.calls == 2 and held.id == "held"


async def test_an_admitted_cancelled_request_is_answered_by_the_batch_claim() -> None:
    gate = HoldingGate(Verdict.CONTINUE)
    ingest, broker, producer = await _ingest_with(gate)
    await producer.submit(request("gone", {}, deadline=NOW + 60))
    await producer.cancel(["gone"])
    assert await ingest.poll_once() == 0
    (result,) = [r async for r in producer.results(block_for=0.01, follow=False)]
    assert result.error_code == str(ErrorCode.CANCELLED) and await broker.backlog("q") == 0


class LosingBroker(MemoryBroker):
    """Every claim is lost while the entry stays pending (its generation is already claimed)."""

    def __init__(self) -> None:
        super().__init__()
        self.peeks = 0

    async def peek(
        self, queue: str, limit: int, *, offset: int = 0, order: PeekOrder = EARLIEST_DEADLINE
    ) -> list[Entry]:
        self.peeks += 1
        return await super().peek(queue, limit, offset=offset, order=order)

    async def claim_many(self, asks: Sequence[ClaimAsk]) -> list[ClaimOutcome]:
        return [ClaimOutcome(None) for _ in asks]


async def test_a_lost_claim_that_stays_pending_does_not_make_ingest_spin() -> None:
    broker, clock = LosingBroker(), VirtualClock(NOW)
    settings = ProcessorSpec(queues=[QUEUE], pools=(PoolSpec(id="p", workers=2),))
    rt = Runtime(broker=broker, clock=clock, settings=settings, metrics=ProcessorMetrics())
    pool = ReadyBuffer(settings.pools[0], ordering="tier-priority", queues=1)
    producer = Producer(broker, queue="q", result_queue="out", clock=clock)
    await producer.submit(request("stuck", {}, deadline=NOW + 60))
    ingest = QueueIngest(rt, QUEUE, pool, None)
    assert await asyncio.wait_for(ingest.poll_once(), timeout=5) == 0
    assert broker.peeks <= settings.batch_size + 1
    assert await broker.backlog("q") == 1


class GrabbingGate(HoldingGate):
    """Takes a resource, then answers its verdict anyway (as a gate chain may)."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict)
        self.released = 0

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        async def release() -> None:
            self.released += 1

        holdings.add(release)
        return await super().apply(request, holdings, now)


@pytest.mark.parametrize("verdict", [Verdict.WAIT, Verdict.REFUSE, Verdict.ERROR, Verdict.DROP])
async def test_what_a_queue_gate_took_is_released_when_it_does_not_admit(
    verdict: Verdict,
) -> None:
    gate = GrabbingGate(verdict)
    ingest, _, producer = await _ingest_with(gate)
    await producer.submit(request("held", {}, deadline=NOW + 60))
    assert await ingest.poll_once() == 0
    assert gate.calls == 1 and gate.released == 1
