"""A queue's ingest faults (issue 26): told once, backed off, a failing entry set aside."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry

from sluiceway.broker.base import Entry
from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.observability.logging import OutageLog
from sluiceway.processor.entry_decision import SETTLED, Fate
from sluiceway.processor.ingest_faults import FAULT_BACKOFF_CAP, IngestFaults
from sluiceway.processor.metrics import ProcessorMetrics, QueueLabels
from sluiceway.processor.runtime import Runtime
from sluiceway.processor.specs import ProcessorSpec

log = logging.getLogger("test")


def _faults() -> tuple[IngestFaults, Runtime, MemoryBroker]:
    broker = MemoryBroker()
    rt = Runtime(
        broker, RealClock(), ProcessorSpec(queues=[]), ProcessorMetrics(CollectorRegistry())
    )
    return IngestFaults(rt, "q", QueueLabels("q", "q", "p")), rt, broker


def test_a_repeating_poll_fault_is_told_once_and_backed_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    faults, rt, _ = _faults()
    outage = OutageLog("broker", log)
    wrongtype = RuntimeError("WRONGTYPE Operation against a key holding the wrong kind of value")
    waits = [faults.poll_failed(outage, wrongtype) for _ in range(12)]
    interval = rt.settings.poll_interval
    assert waits[0] == interval and waits[1] == 2 * interval and waits[-1] == FAULT_BACKOFF_CAP
    told = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(told) == 1 and "WRONGTYPE" in told[0].getMessage() and told[0].exc_info is None
    faults.poll_succeeded()
    assert "works again after 12 failures" in caplog.records[-1].getMessage()


async def test_an_entry_that_keeps_failing_is_skipped_then_quarantined() -> None:
    faults, _, broker = _faults()
    await broker.enqueue("q", [("m", 1.0)])
    entry = Entry("q", "m", 1.0)
    decisions = [await faults.entry_failed(entry, KeyError("x")) for _ in range(3)]
    assert [d.fate for d in decisions[:2]] == [Fate.HELD, Fate.HELD] and decisions[2] is SETTLED
    assert broker.invalid_entries("q") == ["m"]
    (reason,) = broker.invalid_reasons("q").values()
    assert "ingest failed 3 times: KeyError" in reason


async def test_a_lost_connection_is_left_to_the_poll() -> None:
    faults, _, _ = _faults()
    with pytest.raises(ConnectionError):
        await faults.entry_failed(Entry("q", "m", 1.0), ConnectionError("gone"))
