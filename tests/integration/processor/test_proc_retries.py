"""Retries honour Retry-After; connection errors are retried up to the cap; deadlines end
retries with the last HTTP answer, or DEADLINE_EXCEEDED when there was none."""

from __future__ import annotations

import pytest
from processor_harness import collect, guide_entry, guide_settings, rig
from prometheus_client import CollectorRegistry

from sluiceway.ports import free_port
from sluiceway.processor.app import Processor
from sluiceway.processor.outcome import RetryPolicy
from sluiceway.processor.settings import QueueSpec

pytestmark = pytest.mark.serial


def queue(url: str, **kw: object) -> QueueSpec:
    return QueueSpec(id="q", queue_name="q", igw_base_url=url, pool_id="teams", **kw)  # type: ignore[arg-type]


def retries(proc: Processor) -> float:
    value = proc.metrics.registry.get_sample_value(
        "llm_d_async_async_request_retries_total",
        {"queue_id": "q", "queue_name": "q", "pool_name": "teams"},
    )
    return value or 0.0


async def test_retry_after_from_the_simulator_is_honoured() -> None:
    async with rig(scale=40.0) as r:
        now = r.clock.now()
        header = {"X-Return-Error": "503;retry-after=10;times=2"}
        await r.broker.enqueue("q", [guide_entry("t", 0, now=now, headers=header)])
        async with Processor(
            guide_settings([queue(r.url)], workers=1),
            r.broker,
            clock=r.clock,
            registry=CollectorRegistry(),
        ) as proc:
            (result,) = await collect(r.broker, 1, within=30)
            elapsed = r.clock.now() - now
            assert retries(proc) == 2
        assert result.status_code == 200
        assert 20.0 <= elapsed < 20.0 * 1.25 + 5.0


async def test_429_retry_after_beyond_the_deadline_is_clamped_not_fatal() -> None:
    async with rig(scale=40.0) as r:
        now = r.clock.now()
        header = {"X-Return-Error": "429;retry-after=3600;times=1"}
        await r.broker.enqueue("q", [guide_entry("t", 0, now=now, ttl=40, headers=header)])
        async with Processor(
            guide_settings([queue(r.url)], workers=1),
            r.broker,
            clock=r.clock,
            registry=CollectorRegistry(),
        ):
            (result,) = await collect(r.broker, 1, within=30)
        assert result.status_code == 200
        assert r.clock.now() - now < 40


async def test_connection_errors_are_retried_up_to_the_cap() -> None:
    async with rig(scale=50.0) as r:
        dead = f"http://127.0.0.1:{free_port()}"
        spec = queue(dead, retry=RetryPolicy(max_connect_errors=3))
        await r.broker.enqueue("q", [guide_entry("t", 0, now=r.clock.now())])
        async with Processor(
            guide_settings([spec], workers=1), r.broker, clock=r.clock, registry=CollectorRegistry()
        ) as proc:
            (result,) = await collect(r.broker, 1, within=30)
            assert retries(proc) == 2
        assert result.status_code == 0 and result.error_code == "INFERENCE_ERROR"
        assert "Failed to send request to inference" in result.error_message


async def test_deadline_ends_retries_with_the_last_http_answer() -> None:
    async with rig(scale=40.0) as r:
        now = r.clock.now()
        header = {"X-Return-Error": "503;times=1000"}
        await r.broker.enqueue("q", [guide_entry("t", 0, now=now, ttl=12, headers=header)])
        async with Processor(
            guide_settings([queue(r.url)], workers=1),
            r.broker,
            clock=r.clock,
            registry=CollectorRegistry(),
        ):
            (result,) = await collect(r.broker, 1, within=30)
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
