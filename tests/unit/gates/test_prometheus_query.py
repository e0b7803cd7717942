"""prometheus-query: the query verbatim, fallback in budget units, and a missing URL is a
start-up error naming the setting the user writes it in."""

from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.gates.factory import build_gate
from sluiceway.gates.metric import MetricGate

from .hub import context, queries

GUIDE_QUERY = 'clamp(1 - sum(vllm:num_requests_running{inference_pool="p"})/4, 0, 1)'


async def test_guide_params_build_one_shared_query() -> None:
    ctx = context()
    gate = build_gate("prometheus-query", {"query": GUIDE_QUERY, "fallback": "1"}, ctx)
    twin = build_gate("prometheus-query", {"query": GUIDE_QUERY}, ctx)
    assert isinstance(gate, MetricGate) and isinstance(twin, MetricGate)
    assert gate.fallback == 1.0 and twin.fallback == 0.0
    assert len(queries(ctx)) == 1 and queries(ctx)[0].endswith(GUIDE_QUERY)
    assert gate.refresher is twin.refresher


def test_missing_url_names_the_field() -> None:
    with pytest.raises(ConfigError) as info:
        build_gate("prometheus-query", {"query": "up"}, context(url=""))
    assert info.value.field == "ap.prometheusURL"


@pytest.mark.parametrize("params", [{}, {"query": "up", "fallback": 2}, {"query": "up", "x": 1}])
def test_bad_params(params: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        build_gate("prometheus-query", params, context())
