"""endpoint-scrape: saturation from a count over pods x M, absent values, and counted
admission that never lets its own requests exceed the capacity."""

from __future__ import annotations

import pytest
from signals.fakes import SetSource

from sluiceway.errors import ConfigError
from sluiceway.gates.base import Holdings, Verdict
from sluiceway.gates.context import SIGNALS_SERVICE
from sluiceway.gates.endpoint_scrape import CountedScrapeGate, EndpointSignal, scrape_budget
from sluiceway.gates.factory import build_gate
from sluiceway.gates.metric import MetricGate, clamp01
from sluiceway.signals.refresher import SignalHub

from .helpers import NOW, make_request
from .hub import context


async def test_signal_divides_by_ready_pods_times_m() -> None:
    signal = EndpointSignal(SetSource(6), SetSource(2), max_count_per_pod=4, absent_value=None)
    reading = await signal.read()
    assert [s.value for s in reading.samples] == [0.75, 6.0, 8.0]


async def test_absent_metric_uses_absent_value_else_is_blind() -> None:
    absent = EndpointSignal(SetSource(None), None, max_count_per_pod=0, absent_value=0.0)
    assert (await absent.read()).value == 0.0
    blind = EndpointSignal(SetSource(None), None, max_count_per_pod=0, absent_value=None)
    assert (await blind.read()).why_blind() == "no sample"
    down = EndpointSignal(SetSource(error="refused"), None, max_count_per_pod=0, absent_value=0)
    assert (await down.read()).error == "refused"
    no_pods = EndpointSignal(SetSource(1), SetSource(None), max_count_per_pod=2, absent_value=None)
    assert (await no_pods.read()).error == "ready pods: no sample"


def test_budget_formula() -> None:
    assert scrape_budget(0.25, value_type="saturation", baseline=0.05) == pytest.approx(0.7)
    assert scrape_budget(1.5, value_type="saturation", baseline=0.0) == 0.0
    assert scrape_budget(0.6, value_type="budget", baseline=0.1) == pytest.approx(0.5)


async def test_counted_admission_holds_own_in_flight_under_capacity() -> None:
    ctx = context()
    hub = ctx.services[SIGNALS_SERVICE]
    assert isinstance(hub, SignalHub)
    running = SetSource(0)
    signal = EndpointSignal(running, None, max_count_per_pod=2, absent_value=None)
    gate = CountedScrapeGate(hub, signal, clamp01, name="endpoint-scrape", ctx=ctx)
    held = [Holdings() for _ in range(3)]
    verdicts = [(await gate.apply(make_request(), h, NOW)).verdict for h in held]
    assert verdicts == [Verdict.CONTINUE, Verdict.CONTINUE, Verdict.REFUSE]  # scrape still says 0
    await held[0].release_all()
    assert gate.in_flight == 1 and await gate.budget(NOW) == 1.0
    running.value = 2  # others' load seen by the scrape counts too
    await gate.refresher.refresh()
    assert await gate.budget(NOW) == 0.0
    running.error = "down"
    await gate.refresher.refresh()
    assert (await gate.apply(make_request(), Holdings(), NOW)).verdict is Verdict.REFUSE
    await gate.aclose()


def test_builder_modes_and_rules() -> None:
    ctx = context()
    base = {"url": "http://127.0.0.1:9/metrics", "metric": "vllm:num_requests_running"}
    assert type(build_gate("endpoint-scrape", base, ctx)) is MetricGate
    counted = {**base, "admission": "counted", "max_count_per_pod": "4"}
    assert isinstance(build_gate("endpoint-scrape", counted, ctx), CountedScrapeGate)
    for bad in ({**base, "admission": "counted"}, {**counted, "baseline": 0.1}):
        with pytest.raises(ConfigError):
            build_gate("endpoint-scrape", bad, ctx)
