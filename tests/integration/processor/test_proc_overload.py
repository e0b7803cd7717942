"""Ordering under overload, through the whole processor on a virtual clock: arrivals at twice
the capacity with equal relative deadlines. Served by deadline, every request would wait longer
than the last; once the oldest has waited over the target for the interval, the processor
serves the newest first, and once the backlog is drained it serves by deadline again.

The model server is a stand-in that answers after one virtual second, so the timeline is exact:
two workers serve two requests a second while four arrive.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import pytest
from prometheus_client import CollectorRegistry

from sluiceway.broker.memory import MemoryBroker
from sluiceway.broker.peek_order import EARLIEST_DEADLINE, LATEST_DEADLINE
from sluiceway.clock import VirtualClock
from sluiceway.processor import service
from sluiceway.processor.outcome import Attempt, AttemptKind
from sluiceway.processor.producer import Producer, request
from sluiceway.processor.results import HttpAnswer
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.processor.upstream import Upstream

NOW = 1_700_000_000.0
TTL = 300.0  # every request's relative deadline: nothing expires in this test
QUEUE = QueueSpec(id="q", queue_name="q", igw_base_url="http://127.0.0.1:9", pool_id="p")
# No drain at the end: the stand-in's sleepers wake only when the test moves the clock.
SPEC = ProcessorSpec(
    queues=(QUEUE,),
    pools=(PoolSpec("p", 2),),
    result_queue_name="res",
    backlog_interval=0,
    drain_timeout=0,
)
ORDER = "sluiceway_processor_peek_order"


class OneSecondModel(Upstream):
    """Answers 200 one virtual second after the send; records (sent at, arrived at)."""

    served: ClassVar[list[tuple[float, float]]] = []

    async def start(self) -> None:
        pass

    async def send(self, url: str, headers: dict[str, str], body: bytes, **_: Any) -> Attempt:
        self.served.append((self._clock.now(), json.loads(body)["arrived"]))
        await self._clock.sleep(1.0)
        return Attempt(AttemptKind.HTTP, HttpAnswer(200, "{}"))


async def _settle() -> None:
    """Let every task react to what just happened (no task here waits on the wall clock)."""
    for _ in range(300):
        await asyncio.sleep(0)


async def _second(clock: VirtualClock, producer: Producer, arrivals: int) -> None:
    """``arrivals`` requests now, then one virtual second."""
    now = clock.now()
    batch = [
        request(f"r{now - NOW:03.0f}-{i}", {"arrived": now}, deadline=now + TTL, created=now)
        for i in range(arrivals)
    ]
    if batch:
        await producer.submit_many(batch)
    await _settle()
    clock.advance(1.0)
    await _settle()


def _sent_between(start: float, end: float) -> list[float]:
    """How long each request sent in [NOW + start, NOW + end) had waited."""
    return [sent - arrived for sent, arrived in OneSecondModel.served if start <= sent - NOW < end]


async def test_overload_serves_newest_first_then_deadline_order_once_drained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(service, "Upstream", OneSecondModel)
    monkeypatch.setattr(OneSecondModel, "served", [])
    clock, broker, registry = VirtualClock(NOW), MemoryBroker(), CollectorRegistry()
    producer = Producer(broker, queue="q", result_queue="res", clock=clock)
    labels = {"queue_id": "q", "queue_name": "q", "pool_name": "p"}

    def gauge(order: str) -> float | None:
        return registry.get_sample_value(ORDER, {**labels, "order": order})

    async with Processor(SPEC, broker, clock=clock, registry=registry) as proc:
        (ingest,) = proc.ingests
        for _ in range(40):  # 4 arrivals a second, 2 served
            await _second(clock, producer, 4)
        assert ingest.order.order is LATEST_DEADLINE
        assert gauge("latest_deadline") == 1.0 and gauge("earliest_deadline") == 0.0
        # By deadline the wait grows by half a second each second (it passes the 5 s target at
        # 10 s, and the order turns 10 s later): from then on the newest are served.
        waits = _sent_between(0, 22)
        assert waits == sorted(waits) and waits[-1] > 10
        assert max(_sent_between(24, 40)) < 3  # only the few buffered ahead of them
        assert await broker.backlog("q") > 50
        for _ in range(60):  # no more arrivals: the backlog drains, newest first
            await _second(clock, producer, 0)
        assert await broker.backlog("q") == 0
        assert ingest.order.order is EARLIEST_DEADLINE
        assert gauge("earliest_deadline") == 1.0 and gauge("latest_deadline") == 0.0
        drained = [arrived - NOW for sent, arrived in OneSecondModel.served if sent - NOW >= 42]
        assert drained == sorted(drained, reverse=True) and drained[-1] < 12  # oldest last
        # back in deadline order: a small burst is served oldest first
        start = len(OneSecondModel.served)
        for arrivals in (3, 3, 0, 0, 0, 0):
            await _second(clock, producer, arrivals)
        arrived = [a for _, a in OneSecondModel.served[start:]]
        assert len(arrived) == 6 and arrived == sorted(arrived)
        assert ingest.order.order is EARLIEST_DEADLINE
