"""Cancellation before dispatch and in flight: exactly one CANCELLED, never a second result."""

from __future__ import annotations

import pytest
from processor_harness import RESULTS, collect, guide_settings, rig, wait_until
from prometheus_client import CollectorRegistry

from sluiceway.processor.producer import Producer, request
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import PoolSpec, QueueSpec
from sluiceway.sim import SimConfig

pytestmark = pytest.mark.serial

SLOW = SimConfig(max_num_seqs=4, time_to_first_token=0.05, inter_token_latency=0.05)


def payload(max_tokens: int) -> dict[str, object]:
    return {"model": "sim-model", "prompt": "go", "max_tokens": max_tokens}


async def test_cancel_in_flight_aborts_upstream_and_writes_one_cancelled() -> None:
    async with rig(SLOW, scale=5.0) as r:
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        producer = Producer(r.broker, queue="q", clock=r.clock)
        deadline = r.clock.now() + 300
        await producer.submit(request("long", payload(400), deadline=deadline))
        engine = r.sim.engines[0]
        async with Processor(
            guide_settings([q], workers=1), r.broker, clock=r.clock, registry=CollectorRegistry()
        ) as proc:
            await wait_until(lambda: engine.num_running == 1)
            cancelled_at = r.clock.now()
            assert (await producer.cancel(["long"])) == {"long": True}
            (result,) = await collect(r.broker, 1, within=10)
            took = r.clock.now() - cancelled_at
            await wait_until(lambda: engine.num_running == 0, within=5)
            await proc.wait_idle()
        assert result.error_code == "CANCELLED" and result.status_code == 0
        assert took <= 1.0 + 0.25
        assert await r.broker.result_count(RESULTS) == 0


async def test_cancel_before_dispatch_never_reaches_the_model() -> None:
    async with rig(SLOW, scale=5.0) as r:
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        producer = Producer(r.broker, queue="q", clock=r.clock)
        now = r.clock.now()
        await producer.submit(request("first", payload(40), deadline=now + 100))
        await producer.submit(request("second", payload(4), deadline=now + 200))
        await producer.cancel(["second"])
        async with Processor(
            guide_settings([q], workers=1), r.broker, clock=r.clock, registry=CollectorRegistry()
        ):
            results = await collect(r.broker, 2, within=20)
        by_id = {res.id: res for res in results}
        assert by_id["second"].error_code == "CANCELLED"
        assert by_id["first"].status_code == 200
        assert await producer.cancel(["first"]) == {"first": False}


async def test_cancel_of_a_waiting_request_while_the_worker_is_busy() -> None:
    async with rig(SLOW, scale=5.0) as r:
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        producer = Producer(r.broker, queue="q", clock=r.clock)
        now = r.clock.now()
        engine = r.sim.engines[0]
        await producer.submit(request("busy", payload(60), deadline=now + 100))
        await producer.submit(request("queued", payload(4), deadline=now + 200))
        async with Processor(
            guide_settings([q], workers=1), r.broker, clock=r.clock, registry=CollectorRegistry()
        ):
            await wait_until(lambda: engine.num_running == 1)
            await producer.cancel(["queued"])
            results = await collect(r.broker, 2, within=20)
        assert [(res.id, res.status_code, res.error_code) for res in results] == [
            ("busy", 200, ""),
            ("queued", 0, "CANCELLED"),
        ]


async def test_cancel_of_a_request_parked_at_the_pool_gate() -> None:
    async with rig(SLOW, scale=5.0) as r:
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        inner = {"gate_type": "local-max-concurrency", "gate_params": {"limit": "1"}}
        pool = PoolSpec(
            id="teams", workers=2, gate_type="wait-on-refuse", gate_params={"gate": inner}
        )
        producer = Producer(r.broker, queue="q", clock=r.clock)
        now = r.clock.now()
        engine = r.sim.engines[0]
        await producer.submit(request("running", payload(200), deadline=now + 100))
        await producer.submit(request("parked", payload(4), deadline=now + 200))
        settings = guide_settings([q], pools=(pool,))
        async with Processor(settings, r.broker, clock=r.clock, registry=CollectorRegistry()):
            await wait_until(lambda: engine.num_running == 1)
            cancelled_at = r.clock.now()
            await producer.cancel(["parked"])
            (first,) = await collect(r.broker, 1, within=10)
            took = r.clock.now() - cancelled_at
            assert engine.num_running == 1
            await producer.cancel(["running"])
            (second,) = await collect(r.broker, 1, within=10)
        assert (first.id, first.error_code) == ("parked", "CANCELLED")
        assert (second.id, second.error_code) == ("running", "CANCELLED")
        assert took <= 1.0 + 0.5 + 0.25
