from __future__ import annotations

import pytest

from sluiceway.flowcontrol import EndpointSnapshot as E
from sluiceway.flowcontrol.saturation import UtilizationDetector


def fresh(name: str, waiting: int, kv: float, at: float = 10.0) -> E:
    return E(name, waiting=waiting, kv_usage=kv, scraped_at=at)


def test_mean_of_endpoint_scores() -> None:
    det = UtilizationDetector()
    view = det.view([fresh("a", 5, 0.4), fresh("b", 0, 0.4)], 10.1)
    assert view.saturation == (1.0 + 0.5) / 2
    assert view.request_cost == 1 / 10


def test_stale_or_missing_metrics_fail_closed() -> None:
    det = UtilizationDetector(staleness=0.2)
    view = det.view([fresh("a", 0, 0.0, at=9.0), E("b")], 10.0)
    assert view.saturation == 1.0 and det.stale_endpoints == 2


def test_in_flight_credit_until_a_newer_scrape() -> None:
    det = UtilizationDetector()
    eps = [fresh("a", 0, 0.0)]
    assert det.view(eps, 10.01).saturation == 0.0
    det.note_dispatched(3)
    assert det.view(eps, 10.05).saturation == pytest.approx(
        3 / 5
    )  # dispatched since the scrape at 10.0
    det.note_dispatched(2)
    assert det.view(eps, 10.1).saturation == pytest.approx(1.0)  # same scrape: credit accumulates
    assert det.view([fresh("a", 1, 0.0, at=10.15)], 10.2).saturation == pytest.approx(1 / 5)


def test_empty_pool() -> None:
    view = UtilizationDetector().view([], 0.0)
    assert view.pool_empty and view.saturation == 1.0


def test_filter_fails_open() -> None:
    det = UtilizationDetector()
    eps = [fresh("a", 9, 0.1), fresh("b", 1, 0.1)]
    assert [e.name for e in det.keep(eps, 10.0)] == ["b"]
    assert [e.name for e in det.keep([fresh("a", 9, 0.1)], 10.0)] == ["a"]
