"""Retries honour Retry-After; connection errors are retried while the deadline allows (or up
to an opt-in cap); deadlines end
retries with the last HTTP answer, or DEADLINE_EXCEEDED when there was none."""

from __future__ import annotations

from typing import Any

import pytest
from processor_harness import RESULTS, Rig, collect, guide_entry, guide_settings, rig
from prometheus_client import CollectorRegistry

from sluiceway.ports import free_port
from sluiceway.processor.outcome import RetryPolicy
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import QueueSpec
from sluiceway.sim import SimConfig, running_simulator
from sluiceway.wire import ResultRecord

pytestmark = pytest.mark.serial


def queue(url: str, **kw: object) -> QueueSpec:
    return QueueSpec(id="q", queue_name="q", igw_base_url=url, pool_id="teams", **kw)  # type: ignore[arg-type]


def retries(proc: Processor) -> float:
    value = proc.metrics.registry.get_sample_value(
        "llm_d_async_async_request_retries_total",
        {"queue_id": "q", "queue_name": "q", "pool_name": "teams"},
    )
    return value or 0.0


async def serve_one(r: Rig, spec: QueueSpec, **entry: Any) -> tuple[ResultRecord, float, float]:
    """One request served by one worker: its result, the scaled seconds it took, the retries."""
    now = r.clock.now()
    await r.broker.enqueue("q", [guide_entry("t", 0, now=now, **entry)])
    settings = guide_settings([spec], workers=1)
    async with Processor(settings, r.broker, clock=r.clock, registry=CollectorRegistry()) as proc:
        (result,) = await collect(r.broker, 1, within=30)
        return result, r.clock.now() - now, retries(proc)


async def test_retry_after_from_the_simulator_is_honoured() -> None:
    async with rig(scale=40.0) as r:
        header = {"X-Return-Error": "503;retry-after=10;times=2"}
        result, elapsed, retried = await serve_one(r, queue(r.url), headers=header)
        assert retried == 2
        assert result.status_code == 200
        assert 20.0 <= elapsed < 20.0 * 1.25 + 5.0


async def test_429_retry_after_beyond_the_deadline_is_clamped_not_fatal() -> None:
    async with rig(scale=40.0) as r:
        header = {"X-Return-Error": "429;retry-after=3600;times=1"}
        result, elapsed, _ = await serve_one(r, queue(r.url), ttl=40, headers=header)
        assert result.status_code == 200
        assert elapsed < 40


async def test_connection_errors_are_retried_up_to_the_cap() -> None:
    async with rig(scale=50.0) as r:
        dead = f"http://127.0.0.1:{free_port()}"
        spec = queue(dead, retry=RetryPolicy(max_connect_errors=3))
        result, _, retried = await serve_one(r, spec)
        assert retried == 2
        assert result.status_code == 0 and result.error_code == "INFERENCE_ERROR"
        assert "Failed to send request to inference" in result.error_message


async def test_a_model_server_down_longer_than_the_old_give_up_time_still_answers() -> None:
    """Down for 90 scaled seconds (five connection errors in a row used to give up after
    30-60 s): retries continue with their backoff capped, and the request is answered."""
    async with rig(scale=50.0) as r:
        port = free_port()
        spec = queue(f"http://127.0.0.1:{port}")
        now = r.clock.now()
        await r.broker.enqueue("q", [guide_entry("t", 0, now=now, ttl=600)])
        settings = guide_settings([spec], workers=1)
        async with Processor(
            settings, r.broker, clock=r.clock, registry=CollectorRegistry()
        ) as proc:
            await r.clock.sleep(90)  # the outage itself, not a wait for the processor
            assert await r.broker.result_count(RESULTS) == 0 and retries(proc) >= 5
            async with running_simulator(SimConfig(), clock=r.clock, port=port):
                (result,) = await collect(r.broker, 1, within=30)
        assert result.status_code == 200
        assert r.clock.now() - now < 90 + 10 + 5  # the next attempt within the capped backoff


async def test_deadline_ends_retries_with_the_last_http_answer() -> None:
    async with rig(scale=40.0) as r:
        header = {"X-Return-Error": "503;times=1000"}
        result, _, _ = await serve_one(r, queue(r.url), ttl=12, headers=header)
        assert result.status_code == 503 and result.error_code == ""


async def test_deadline_without_any_answer_is_deadline_exceeded() -> None:
    async with rig(scale=40.0) as r:
        dead = f"http://127.0.0.1:{free_port()}"
        spec = queue(dead, retry=RetryPolicy(max_connect_errors=1000))
        now = r.clock.now()
        await r.broker.enqueue("q", [guide_entry("t", 0, now=now, ttl=8)])
        await r.broker.enqueue("q", [guide_entry("old", 0, now=now - 100, ttl=50)])
        async with Processor(
            guide_settings([spec], workers=1), r.broker, clock=r.clock, registry=CollectorRegistry()
        ):
            results = await collect(r.broker, 2, within=30)
        by_id = {res.id: res for res in results}
        assert by_id["old-r-0000"].error_code == "DEADLINE_EXCEEDED"
        assert by_id["t-r-0000"].error_code == "DEADLINE_EXCEEDED"
        assert by_id["t-r-0000"].payload.startswith('{"error":"deadline exceeded')
