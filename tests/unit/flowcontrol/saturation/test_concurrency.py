from __future__ import annotations

import pytest

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol import EndpointSnapshot as E
from sluiceway.flowcontrol.saturation import ConcurrencyDetector


def test_requests_mode_is_total_over_capacity() -> None:
    view = ConcurrencyDetector(max_concurrency=10).view([E("a", inflight_requests=5), E("b")], 0)
    assert view.saturation == 0.25 and view.request_cost == 0.05  # b adds capacity, no load
    assert view.cost(1000) == 0.05


def test_tokens_and_hybrid_modes() -> None:
    eps = [E("a", inflight_requests=1, inflight_tokens=500), E("b", inflight_requests=4)]
    tokens = ConcurrencyDetector(max_token_concurrency=1000, mode="tokens").view(eps, 0)
    assert tokens.saturation == 0.25 and tokens.cost(100) == 0.05
    hybrid = ConcurrencyDetector(max_concurrency=4, max_token_concurrency=1000, mode="hybrid")
    assert hybrid.view(eps, 0).saturation == (0.5 + 1.0) / 2


def test_no_endpoints_reads_saturated_and_empty() -> None:
    view = ConcurrencyDetector().view([], 0)
    assert view.saturation == 1.0 and view.pool_empty


def test_filter_keeps_endpoints_strictly_below_capacity() -> None:
    det = ConcurrencyDetector(max_concurrency=2, headroom=0.5)  # int(2 x 1.5) = 3
    eps = [E("a", inflight_requests=2), E("b", inflight_requests=3)]
    assert [e.name for e in det.keep(eps)] == ["a"]


def test_parameters_validated() -> None:
    with pytest.raises(ConfigError) as err:
        ConcurrencyDetector(max_concurrency=0)
    assert err.value.field == "maxConcurrency"
