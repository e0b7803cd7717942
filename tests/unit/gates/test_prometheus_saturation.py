"""prometheus-saturation: upstream's formula; its fallback (saturation units) becomes a budget."""

from __future__ import annotations

import logging

import pytest

from sluiceway.gates.factory import build_gate
from sluiceway.gates.metric import MetricGate
from sluiceway.gates.prometheus_saturation import saturation_budget

from .hub import context, queries


@pytest.mark.parametrize(
    ("v", "threshold", "budget"),
    [(1.0, 0.8, 0.8), (0.5, 0.8, 0.3), (0.2, 0.8, 0.0), (0.1, 0.8, 0.0), (1.0, 1.0, 1.0)],
)
def test_formula(v: float, threshold: float, budget: float) -> None:
    assert saturation_budget(v, threshold) == pytest.approx(budget)


def test_fallback_is_closed_unless_set_and_converted(caplog: pytest.LogCaptureFixture) -> None:
    ctx = context()
    closed = build_gate("prometheus-saturation", {"pool": "p"}, ctx)
    assert isinstance(closed, MetricGate) and closed.fallback == 0.0
    caplog.set_level(logging.INFO)
    open_ = build_gate("prometheus-saturation", {"pool": "p", "fallback": "0"}, ctx)
    assert isinstance(open_, MetricGate) and open_.fallback == pytest.approx(0.8)
    shut = build_gate("prometheus-saturation", {"pool": "p", "fallback": 1}, ctx)
    assert isinstance(shut, MetricGate) and shut.fallback == 0.0
    assert any("fallback saturation 0.0 means budget" in r.getMessage() for r in caplog.records)
    assert len(queries(ctx)) == 1 and "stage=" in queries(ctx)[0]
