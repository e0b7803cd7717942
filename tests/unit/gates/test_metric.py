"""A metric gate: the formula while its signal reads, the fallback while blind, and it says so
(gauges on every read, one log line per transition, a wake-up on every change)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest
from signals.fakes import SetSource

from sluiceway.clock import VirtualClock
from sluiceway.gates.base import Holdings, Verdict
from sluiceway.gates.context import GateContext
from sluiceway.gates.metric import (
    CREDIT_PERIODS,
    GAUGES_SERVICE,
    SIGNALS_SERVICE,
    MetricGate,
    clamp01,
)
from sluiceway.gates.pool_share import PoolShare
from sluiceway.signals.refresher import SignalHub

from .helpers import NOW, make_request


class Gauges:
    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, str], bool, float | None, float]] = []

    def gate_signal(
        self, labels: Mapping[str, str], *, available: bool, value: float | None, threshold: float
    ) -> None:
        self.calls.append((dict(labels), available, value, threshold))


def _gate(source: SetSource, *, fallback: float = 0.0) -> tuple[MetricGate, Gauges, list[int]]:
    clock, gauges, wakes = VirtualClock(), Gauges(), []
    hub = SignalHub(clock)
    ctx = GateContext(
        clock=clock,
        services={SIGNALS_SERVICE: hub, GAUGES_SERVICE: gauges},
        labels={"queue_id": "", "queue_name": "", "pool_name": "teams"},
        wake=lambda: wakes.append(1),
    )
    gate = MetricGate(
        hub, source, clamp01, fallback=fallback, threshold=0.8, name="t", ctx=ctx, pool="p"
    )
    return gate, gauges, wakes


async def test_budget_is_the_clamped_value_and_exported() -> None:
    gate, gauges, wakes = _gate(SetSource(1.7))
    assert await gate.budget(NOW) == 1.0 and not gate.blind
    labels, available, value, threshold = gauges.calls[-1]
    assert labels["inference_pool"] == "p" and labels["pool_name"] == "teams"
    assert (available, value, threshold) == (True, 1.7, 0.8)
    assert wakes == [1]
    await gate.aclose()
    assert gate.refresher.subscribers == 0


async def test_blind_uses_the_fallback_and_logs_each_transition_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = SetSource(error="connection refused")
    gate, gauges, _ = _gate(source, fallback=0.25)
    caplog.set_level(logging.INFO, logger="sluiceway.gates.metric")
    for _ in range(3):
        assert await gate.budget(NOW) == 0.25
    assert gate.blind and gauges.calls[-1][1] is False
    source.error, source.value = "", 0.5
    await gate.refresher.refresh()
    assert await gate.budget(NOW) == 0.5 and not gate.blind
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "blind" in m]) == 1
    assert len([m for m in messages if "leaving fallback" in m]) == 1
    assert "connection refused" in messages[0] and "pool_name=teams" in messages[0]
    await gate.aclose()


async def test_the_blind_line_is_what_the_guide_greps(caplog: pytest.LogCaptureFixture) -> None:
    """The guide checks ``kubectl logs deploy/llm-d-async | grep -i "using fallback value"``."""
    gate, _, _ = _gate(SetSource(error="connection refused"), fallback=1.0)
    caplog.set_level(logging.WARNING, logger="sluiceway.gates.metric")
    assert await gate.budget(NOW) == 1.0
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "using fallback value (budget 1.0)" in record.getMessage()
    await gate.aclose()


async def test_no_series_is_blind_and_default_fallback_is_closed() -> None:
    gate, _, _ = _gate(SetSource(None))
    assert await gate.budget(NOW) == 0.0 and gate.blind
    decision = await gate.apply(make_request(), Holdings(), NOW)
    assert decision.verdict is Verdict.REFUSE
    await gate.aclose()


async def test_recent_unfinished_admissions_lower_the_budget() -> None:
    gate, _, _ = _gate(SetSource(1.0))  # W = 1 in this context: each admission costs 1/1
    first = Holdings()
    assert (await gate.apply(make_request(), first, NOW)).admitted
    assert gate.credit(NOW) == 1 and await gate.budget(NOW) == 0.0
    assert (await gate.apply(make_request(), Holdings(), NOW)).verdict is Verdict.REFUSE
    await first.release_all()  # finished: its credit lapses at once
    assert await gate.budget(NOW) == 1.0
    held = Holdings()
    await gate.apply(make_request(), held, NOW)
    window = CREDIT_PERIODS * gate.refresher.period
    assert await gate.budget(NOW + window) == 1.0  # old enough for the signal to show it
    await gate.aclose()


async def test_with_several_processors_an_admission_costs_its_share() -> None:
    """Each admission comes off this processor's share, a 1/M part of the pool's target."""
    clock = VirtualClock()
    hub = SignalHub(clock)
    ctx = GateContext(
        clock=clock, workers=16, services={SIGNALS_SERVICE: hub}, share=lambda: PoolShare(2, 0)
    )
    gate = MetricGate(hub, SetSource(0.5), clamp01, name="t", ctx=ctx)
    assert await gate.budget(NOW) == 0.5
    await gate.apply(make_request(), Holdings(), NOW)
    assert await gate.budget(NOW) == 0.5 - 2 / 16
    await gate.aclose()
