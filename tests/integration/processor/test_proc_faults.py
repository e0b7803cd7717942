"""Broker failures: a failed ack leaves the claim to lapse; the reclaimer redelivers it and the
request still gets exactly one result."""

from __future__ import annotations

from dataclasses import replace

import pytest
from processor_harness import RESULTS, collect, guide_entry, guide_settings, rig
from prometheus_client import CollectorRegistry

from sluiceway.broker.base import Claim, ResultWrite
from sluiceway.broker.memory import MemoryBroker
from sluiceway.errors import BrokerError
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import QueueSpec

pytestmark = pytest.mark.serial


class FirstAckFails(MemoryBroker):
    def __init__(self) -> None:
        super().__init__()
        self.failed = 0

    async def ack(self, claim: Claim, result: ResultWrite) -> bool:
        if not self.failed:
            self.failed += 1
            raise BrokerError("connection reset while acking")
        return await super().ack(claim, result)


async def test_a_failed_ack_is_redelivered_after_the_lease() -> None:
    async with rig() as r:
        broker = FirstAckFails()
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        await broker.enqueue("q", [guide_entry("t", 0, now=r.clock.now())])
        settings = replace(guide_settings([q], workers=1), claim_lease=3.0, reclaim_interval=0.5)
        async with Processor(settings, broker, clock=r.clock, registry=CollectorRegistry()) as proc:
            (result,) = await collect(broker, 1, within=20)
            await proc.wait_idle()
        assert broker.failed == 1 and result.status_code == 200
        assert await broker.result_count(RESULTS) == 0 and broker.claimed_count("q") == 0


class CancelChecksFailInFlight(MemoryBroker):
    """Checks 1-3 (ingest, admit, before the send) succeed; the in-flight ones 4-6 fail."""

    def __init__(self) -> None:
        super().__init__()
        self.checks = 0

    async def is_cancelled(self, request_id: str, request_token: str) -> bool:
        self.checks += 1
        if 4 <= self.checks <= 6:
            raise BrokerError("redis timeout")
        return await super().is_cancelled(request_id, request_token)


async def test_a_failing_cancel_check_does_not_abort_the_call() -> None:
    from sluiceway.sim import SimConfig

    slow = SimConfig(max_num_seqs=4, time_to_first_token=0.05, inter_token_latency=0.05)
    async with rig(slow, scale=10.0) as r:
        broker = CancelChecksFailInFlight()
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        await broker.enqueue("q", [guide_entry("t", 0, now=r.clock.now(), max_tokens=80)])
        async with Processor(
            guide_settings([q], workers=1), broker, clock=r.clock, registry=CollectorRegistry()
        ):
            (result,) = await collect(broker, 1, within=20)
        assert broker.checks > 6 and result.status_code == 200
