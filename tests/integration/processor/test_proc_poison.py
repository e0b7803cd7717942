"""Issue 26: one bad entry never stops a queue or a processor. Each poison entry is queued
beside valid ones: the valid ones are served, the bad one gets INVALID_REQUEST with its reason
or goes to ``<queue>:invalid`` with its reason, and no traceback is logged."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from processor_harness import RESULTS, collect, guide_entry, guide_settings, rig
from prometheus_client import CollectorRegistry

from sluiceway.broker.memory import MemoryBroker
from sluiceway.processor import worker as worker_module
from sluiceway.processor.service import Processor
from sluiceway.processor.specs import QueueSpec
from sluiceway.wire import ErrorCode

pytestmark = pytest.mark.serial

DEPTH = 60_000


def _member(now: float, request_id: str, **data: Any) -> tuple[str, float]:
    body = {"id": request_id, "deadline": now + 300, **data}
    return json.dumps({"internal": {}, "request_kind": "plain", "data": body}), now + 300


def _poison(now: float) -> dict[str, tuple[str, float]]:
    deadline, deep = now + 300, "[" * DEPTH + "]" * DEPTH
    nested = f'{{"data":{{"id":"deep","deadline":{deadline},"payload":{deep}}}}}'
    return {
        "deep": (nested, now + 300),
        "bytes": (f'{{"data":{{"id":"bytes","deadline":{deadline},"payload":"\udcff"}}}}', now),
        "header": _member(now, "header", headers={"x-a": "v\r\nx-injected: 1"}),
        "route": _member(now, "route", result_queue_name="q:invalid"),
        "queue-route": _member(now, "queue-route", result_queue_name="q"),
    }


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.WARNING]


async def test_poison_entries_beside_valid_ones(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with rig() as r:
        broker = MemoryBroker()
        now = r.clock.now()
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        valid = [guide_entry("t", i, now=now) for i in range(4)]
        # Queued before the processor starts: it must start and serve the rest.
        await broker.enqueue("q", [*valid[:2], *_poison(now).values(), *valid[2:]])
        async with Processor(
            guide_settings([q], workers=2), broker, clock=r.clock, registry=CollectorRegistry()
        ) as proc:
            results = await collect(broker, 7, within=20)
            await proc.wait_idle()
        by_id = {res.id: res for res in results}
        assert all(by_id[f"t-r-{i:04d}"].status_code == 200 for i in range(4))
        assert by_id["header"].error_code == ErrorCode.INVALID_REQUEST
        assert "data.headers.x-a" in (by_id["header"].error_message or "")
        for routed in ("route", "queue-route"):
            assert by_id[routed].error_code == ErrorCode.INVALID_REQUEST
            assert "names a key this processor reads" in (by_id[routed].error_message or "")
        reasons = sorted(json.loads(v)["reason"] for v in broker.invalid_reasons("q").values())
        assert reasons == ["JSON nested deeper than 200 levels", "not UTF-8"]
        assert await broker.backlog("q") == 0 and broker.claimed_count("q") == 0
        assert await broker.result_count("q") == 0
    _no_traceback(caplog)


async def test_a_request_failing_the_same_way_is_backed_off_then_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[float] = []
    real = worker_module.build_headers

    def failing(**kw: Any) -> dict[str, str]:
        if kw["request_id"] == "t-r-0000":
            calls.append(r.clock.now())
            raise ValueError("Newline or carriage return character detected in HTTP header")
        return real(**kw)

    monkeypatch.setattr(worker_module, "build_headers", failing)
    async with rig() as r:
        broker = MemoryBroker()
        q = QueueSpec(id="q", queue_name="q", igw_base_url=r.url, pool_id="teams")
        await broker.enqueue("q", [guide_entry("t", i, now=r.clock.now()) for i in range(2)])
        async with Processor(
            guide_settings([q], workers=1), broker, clock=r.clock, registry=CollectorRegistry()
        ) as proc:
            results = {res.id: res for res in await collect(broker, 2, within=20)}
            await proc.wait_idle()
        failed = results["t-r-0000"]
        assert failed.error_code == ErrorCode.INFERENCE_ERROR
        assert "failed 3 times the same way: ValueError" in (failed.error_message or "")
        assert results["t-r-0001"].status_code == 200
        assert len(calls) == 3 and calls[2] - calls[1] > calls[1] - calls[0] > 0
        assert await broker.result_count(RESULTS) == 0
