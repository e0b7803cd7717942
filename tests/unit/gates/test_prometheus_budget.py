"""prometheus-budget: D above the baseline, and where it closes is logged at start-up."""

from __future__ import annotations

import logging

import pytest

from sluiceway.errors import ConfigError
from sluiceway.gates.factory import build_gate
from sluiceway.gates.metric import MetricGate
from sluiceway.gates.prometheus_budget import free_share_budget

from .hub import context


def test_formula() -> None:
    assert free_share_budget(0.05, 0.05) == 0.0
    assert free_share_budget(0.5, 0.05) == pytest.approx(0.45)


def test_build_logs_where_it_closes(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    gate = build_gate("prometheus-budget", {"pool": "p", "max_concurrency": "10"}, context())
    assert isinstance(gate, MetricGate) and gate.fallback == 0.0
    assert any("closesAtLoadPerReadyPod=9.5" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "params", [{"pool": "p", "baseline": 1}, {"pool": "p", "max_concurrency": 0}]
)
def test_bad_params(params: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        build_gate("prometheus-budget", params, context())
