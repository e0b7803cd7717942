"""The worker's admit and dispatch steps over the memory broker, with a stand-in upstream:
how often it asks the broker about cancellation, and that a cancel before the send wins."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import VirtualClock
from sluiceway.gates.base import CONTINUE, WAIT, Decision, Gate, GateRequest, Holdings
from sluiceway.processor import worker as worker_module
from sluiceway.processor.ingest import QueueIngest
from sluiceway.processor.metrics import ProcessorMetrics
from sluiceway.processor.outcome import Attempt, AttemptKind
from sluiceway.processor.producer import Producer, request
from sluiceway.processor.ready_buffer import ReadyBuffer
from sluiceway.processor.results import HttpAnswer
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.service_time import ServiceTimes, ServiceTimeSettings
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.processor.upstream import Upstream
from sluiceway.processor.worker import Worker

NOW = 1_700_000_000.0
QUEUE = QueueSpec(id="q", queue_name="q", igw_base_url="http://gw", pool_id="p")


class CountingBroker(MemoryBroker):
    def __init__(self) -> None:
        super().__init__()
        self.checks = 0

    async def is_cancelled(self, request_id: str, request_token: str) -> bool:
        self.checks += 1
        return await super().is_cancelled(request_id, request_token)


class AnsweringUpstream(Upstream):
    """Answers 200 after ``takes`` seconds of which ``queued`` in the router, counting the
    sends and keeping the last one's headers."""

    def __init__(self, clock: VirtualClock, *, takes: float = 0.0, queued: float = 0.0) -> None:
        super().__init__(clock, connections=1)
        self.sent = 0
        self.headers: dict[str, str] = {}
        self._clock, self._takes, self._queued = clock, takes, queued

    async def send(self, url: str, headers: dict[str, str], body: bytes, **_: Any) -> Attempt:
        self.sent += 1
        self.headers = headers
        self._clock.advance(self._takes)
        return Attempt(AttemptKind.HTTP, HttpAnswer(200, "{}"), queued=self._queued)


class CancellingGate:
    """A pool gate that admits, while the producer cancels the request meanwhile."""

    def __init__(self, producer: Producer) -> None:
        self._producer = producer

    async def budget(self, now: float) -> float:
        return 1.0

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        await self._producer.cancel([request.request_id])
        return CONTINUE

    async def aclose(self) -> None:
        pass


async def _one_request(
    gate: Callable[[Producer], Gate] | None = None,
) -> tuple[Worker, ReadyBuffer, CountingBroker, Producer, AnsweringUpstream]:
    broker, clock = CountingBroker(), VirtualClock(NOW)
    settings = ProcessorSpec(queues=[QUEUE], pools=(PoolSpec(id="p", workers=1),))
    rt = Runtime(broker=broker, clock=clock, settings=settings, metrics=ProcessorMetrics())
    producer = Producer(broker, queue="q", result_queue="out", clock=clock)
    pool_gate = None if gate is None else gate(producer)
    pool = ReadyBuffer(settings.pools[0], ordering="tier-priority", queues=1, gate=pool_gate)
    await producer.submit(request("r", {}, deadline=NOW + 60))
    assert await QueueIngest(rt, QUEUE, pool, None).poll_once() == 1
    upstream = AnsweringUpstream(clock)
    return Worker(rt, pool, upstream), pool, broker, producer, upstream


async def test_an_ungated_request_is_checked_for_cancellation_once_before_the_send() -> None:
    worker, pool, broker, producer, upstream = await _one_request()
    before = broker.checks
    item = await pool.take()
    assert item is not None
    await worker.process(item)
    (result,) = [r async for r in producer.results(block_for=0.01, follow=False)]
    assert result.status_code == 200 and upstream.sent == 1
    assert broker.checks - before == 1


async def test_a_cancel_while_the_pool_gate_admits_wins_over_the_send() -> None:
    worker, pool, _, producer, upstream = await _one_request(CancellingGate)
    item = await pool.take()
    assert item is not None
    await worker.process(item)
    (result,) = [r async for r in producer.results(block_for=0.01, follow=False)]
    assert result.error_code == "CANCELLED" and upstream.sent == 0


class BusyThenFreeGate:
    """A pool gate whose first answer is Wait, while another worker finishes meanwhile (the
    pulse fires during the gate's own call); it admits when asked again."""

    def __init__(self, pool: Callable[[], ReadyBuffer]) -> None:
        self._pool = pool
        self.calls = 0

    async def budget(self, now: float) -> float:
        return 1.0

    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        self.calls += 1
        if self.calls > 1:
            return CONTINUE
        self._pool().capacity_changed.fire()
        return WAIT

    async def aclose(self) -> None:
        pass


async def test_a_parked_worker_does_not_miss_a_finish_during_its_gate_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_module, "_PARK_BACKSTOP", 3600.0)  # only the pulse can wake it
    pools: list[ReadyBuffer] = []
    gate = BusyThenFreeGate(lambda: pools[0])
    worker, pool, _, _, upstream = await _one_request(lambda _: gate)
    pools.append(pool)
    item = await pool.take()
    assert item is not None
    await asyncio.wait_for(worker.process(item), 10.0)
    assert gate.calls == 2 and upstream.sent == 1


async def test_the_router_is_told_the_queue_budget_and_model_time_is_learned() -> None:
    """The TTL is the time left less the model time one request needs; the model time is the
    answer's time less what the router said the request queued."""
    worker, pool, _, _, _ = await _one_request()
    clock = worker._rt.clock
    assert isinstance(clock, VirtualClock)
    upstream = AnsweringUpstream(clock, takes=5.0, queued=3.0)
    worker._upstream = upstream
    service = worker._rt.service = ServiceTimes(ServiceTimeSettings(min_samples=1))
    service.observe("q", 2.0, clock.now())
    item = await pool.take()
    assert item is not None
    await worker.process(item)
    assert upstream.headers["x-llm-d-inference-ttl"] == "58.000s"  # 60 left, 2 needed
    # the upper of two samples: 2 s, not 5 (answered after 5 s, 3 of them queued)
    assert service.estimate("q", clock.now()) == 2.0


async def test_a_callers_own_queue_budget_is_sent_as_it_is() -> None:
    broker, clock = CountingBroker(), VirtualClock(NOW)
    settings = ProcessorSpec(queues=[QUEUE], pools=(PoolSpec(id="p", workers=1),))
    rt = Runtime(broker=broker, clock=clock, settings=settings, metrics=ProcessorMetrics())
    producer = Producer(broker, queue="q", result_queue="out", clock=clock)
    pool = ReadyBuffer(settings.pools[0], ordering="tier-priority", queues=1)
    entry = request("r", {}, deadline=NOW + 60, headers={"x-llm-d-inference-ttl": "5s"})
    await producer.submit(entry)
    assert await QueueIngest(rt, QUEUE, pool, None).poll_once() == 1
    upstream = AnsweringUpstream(clock)
    item = await pool.take()
    assert item is not None
    await Worker(rt, pool, upstream).process(item)
    assert upstream.headers["x-llm-d-inference-ttl"] == "5s"
