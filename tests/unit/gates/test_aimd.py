"""aimd: admission through the pool's window (Wait for reserved, Refuse for overflow), the
release at the request's end, answers fed back, the shared window, the signal, its gauges and
configuration errors naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from signals.fakes import SetSource

from sluiceway.clock import VirtualClock
from sluiceway.errors import ConfigError
from sluiceway.gates.aimd import WINDOWS_SERVICE, AimdGate, SharedWindows, Signal
from sluiceway.gates.aimd_window import AimdWindow, WindowSettings
from sluiceway.gates.base import (
    CLASSIFICATION_LABEL,
    AnswerFacts,
    Feedback,
    FeedbackRelay,
    Gate,
    Holdings,
    Verdict,
)
from sluiceway.gates.context import GAUGES_SERVICE, GateContext
from sluiceway.gates.factory import build_gate
from sluiceway.processor.metrics import ProcessorMetrics
from sluiceway.signals.refresher import Refresher
from sluiceway.wire import headers as h

from .helpers import NOW, make_request
from .hub import context, queries

OWNER = {"queue_id": "", "queue_name": "", "pool_name": "teams"}


def ctx(windows: SharedWindows | None = None, **services: object) -> GateContext:
    """A context with a private table of windows (no test shares the process's)."""
    shared = windows or SharedWindows()
    return GateContext(
        clock=VirtualClock(NOW),
        workers=8,
        services={WINDOWS_SERVICE: shared, **services},
        labels=OWNER,
    )


def aimd(params: dict[str, Any], context: GateContext | None = None) -> AimdGate:
    gate = build_gate("aimd", params, context or ctx())
    assert isinstance(gate, AimdGate)
    return gate


def request(holder: str, classification: str | None = None) -> Any:
    labels = {} if classification is None else {CLASSIFICATION_LABEL: classification}
    req = make_request(labels)
    req.holder = holder
    return req


async def admit(gate: Gate, holder: str, classification: str | None = None) -> Verdict:
    decision = await gate.apply(request(holder, classification), Holdings(), NOW)
    return decision.verdict


async def test_admits_while_in_flight_is_below_the_window() -> None:
    gate = aimd({"min_window": 2, "max_window": 4})
    held = [Holdings(), Holdings()]
    for i, holdings in enumerate(held):
        assert (await gate.apply(request(f"h{i}"), holdings, NOW)).admitted
    assert gate.window.in_flight == 2
    assert await admit(gate, "unclassified") is Verdict.WAIT
    assert await admit(gate, "reserved", "reserved") is Verdict.WAIT
    assert await admit(gate, "overflow", "overflow") is Verdict.REFUSE
    assert await gate.budget(NOW) == 1.0  # the window decides per request, not the budget
    await gate.aclose()


async def test_the_request_end_releases_its_slot_once() -> None:
    gate = aimd({"min_window": 1, "max_window": 4})
    holdings = Holdings()
    assert (await gate.apply(request("a"), holdings, NOW)).admitted
    assert await admit(gate, "b") is Verdict.WAIT
    await holdings.release_all()
    await holdings.release_all()
    assert gate.window.in_flight == 0
    assert await admit(gate, "b") is Verdict.CONTINUE
    await gate.aclose()


async def test_answers_to_admitted_requests_move_the_window() -> None:
    gate = aimd({"min_window": 1, "max_window": 8})
    holdings = Holdings()
    assert (await gate.apply(request("a"), holdings, NOW)).admitted
    gate.observe(AnswerFacts("a", 200), NOW)
    assert gate.window.window == 2  # slow start
    gate.observe(AnswerFacts("stranger", 429, h.REASON_SATURATED), NOW)
    assert gate.window.window == 2  # not admitted here: not this gate's evidence
    gate.observe(AnswerFacts("a", 429, h.REASON_TTL_EXPIRED, retry_after=9.0), NOW)
    assert gate.window.window == 2 and gate.window.cuts == 0
    gate.observe(AnswerFacts("a", 429, h.REASON_SATURATED, retry_after=3.0), NOW)
    assert gate.window.cuts == 1 and not gate.window.held(NOW)  # the router's: a cut, no hold
    gate.observe(AnswerFacts("a", 429, "", retry_after=3.0), NOW)
    assert gate.window.held(NOW + 2.9)  # a bare 429's Retry-After holds the window
    await holdings.release_all()
    assert await admit(gate, "b") is Verdict.WAIT  # held for the Retry-After
    await gate.aclose()


async def test_pools_share_one_window_while_a_gate_uses_it() -> None:
    windows = SharedWindows()
    one = aimd({"pool": "p", "max_window": 4}, ctx(windows))
    two = aimd({"pool": "p", "max_window": 4}, ctx(windows))
    other = aimd({}, ctx(windows))  # keyed by the owning pool, "teams"
    assert one.window is two.window and other.window is not one.window
    await one.aclose()
    await one.aclose()
    assert "p" in windows
    await two.aclose()
    await other.aclose()
    assert "p" not in windows and "teams" not in windows


async def test_max_window_defaults_to_the_pools_workers() -> None:
    gate = aimd({})
    assert gate.window.settings == WindowSettings(min_window=1, max_window=8)
    assert gate.window.window == 1 and gate.window.ssthresh == 8
    await gate.aclose()


async def test_nested_in_a_combinator_it_still_hears_answers() -> None:
    inner = {"gate_type": "aimd", "gate_params": {"min_window": 1, "max_window": 4}}
    gate = build_gate("wait-on-refuse", {"gate": inner}, ctx())
    assert isinstance(gate, FeedbackRelay) and isinstance(gate, Feedback)
    (window_gate,) = gate.observers
    assert isinstance(window_gate, AimdGate)
    holdings = Holdings()
    assert (await gate.apply(request("a"), holdings, NOW)).admitted
    assert await admit(gate, "b", "overflow") is Verdict.WAIT  # wait-on-refuse turns Refuse
    gate.observe(AnswerFacts("a", 200), NOW)
    assert window_gate.window.window == 2
    await gate.aclose()
    plain = build_gate("composite", {"gates": [{"gate_type": "constant"}]}, ctx())
    assert not isinstance(plain, FeedbackRelay)  # nothing nested hears answers: unwrapped


async def test_the_signal_above_its_target_cuts_and_holds_growth() -> None:
    clock = VirtualClock(NOW)
    source = SetSource(3.0)
    refresher = Refresher(source, period=1.0, clock=clock)
    window = AimdWindow(WindowSettings(min_window=1, max_window=16))
    window.window = 8.0
    gate = AimdGate(window, signal=Signal(refresher, lambda seconds: seconds - 2.0))
    assert await admit(gate, "a") is Verdict.CONTINUE  # the first reading: 3 s > 2 s
    assert (window.window, window.cuts, window.signal_high) == (4, 1, True)
    assert await admit(gate, "b") is Verdict.CONTINUE  # the same reading counts once
    assert window.cuts == 1
    source.value = 1.0
    await refresher.refresh()
    await gate.budget(NOW)
    assert window.signal_high is False and window.cuts == 1
    source.error = "down"
    await refresher.refresh()
    await gate.budget(NOW)
    assert window.signal_high is False  # blind: the answers alone decide
    await gate.aclose()
    assert refresher.subscribers == 0


async def test_targets_read_the_routers_signals() -> None:
    hub_ctx = context(**{WINDOWS_SERVICE: SharedWindows()})
    saturation = aimd({"pool": "p", "saturation_target": "0.8"}, hub_ctx)
    duration = aimd({"pool": "p", "namespace": "ns", "queue_duration_target": "2s"}, hub_ctx)
    found = queries(hub_ctx)
    assert any("flow_control_pool_saturation" in q for q in found)
    assert any(
        "flow_control_request_queue_duration_seconds_sum" in q and 'namespace="ns"' in q
        for q in found
    )
    assert saturation.window is duration.window  # one pool, one window
    await saturation.aclose()
    await duration.aclose()
    with pytest.raises(ConfigError) as info:
        aimd({"pool": "p", "saturation_target": 0.8}, context(url=""))
    assert info.value.field == "ap.prometheusURL"


async def test_gauges_read_the_window_at_scrape_time() -> None:
    metrics = ProcessorMetrics(CollectorRegistry())
    gate = aimd({"pool": "p", "min_window": 2, "max_window": 6}, ctx(**{GAUGES_SERVICE: metrics}))
    assert await admit(gate, "a") is Verdict.CONTINUE
    labels = {**OWNER, "inference_pool": "p"}

    def sample(name: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    assert sample("sluiceway_gate_aimd_window") == 2
    assert sample("sluiceway_gate_aimd_ssthresh") == 6
    assert sample("sluiceway_gate_aimd_in_flight") == 1
    gate.window.window = 5.0
    assert sample("sluiceway_gate_aimd_window") == 5
    await gate.aclose()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"min_window": 0}, "gate_params.min_window"),
        ({"min_window": 4, "max_window": 2}, "gate_params.max_window"),
        ({"decrease": 1}, "gate_params.decrease"),
        ({"increase": "0"}, "gate_params.increase"),
        ({"hold_duration": "soon"}, "gate_params.hold_duration"),
        ({"saturation_target": 0.8}, "gate_params.saturation_target"),  # needs pool
        (
            {"pool": "p", "queue_duration_target": "1s", "saturation_target": 0.8},
            "gate_params.saturation_target",
        ),
        ({"window": 4}, "gate_params.window"),  # unknown
    ],
)
def test_bad_configs_name_the_field(params: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_gate("aimd", params, ctx())
    assert info.value.field == field
