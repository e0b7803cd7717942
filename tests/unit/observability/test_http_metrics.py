"""HTTP metrics from records: labels (route template, status, band), durations, time to the
first byte of streams only."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from sluiceway.observability.http_metrics import HttpMetrics, band_of, status_class
from sluiceway.observability.served_request import ServedRequest


def finished(component: str = "router", status: int = 200, **changes: object) -> ServedRequest:
    found = ServedRequest(component, "POST", "/v1/completions", "/v1/completions", 5.0, 0)
    found.status, found.first_byte_at, found.ended_at = status, 5.02, 6.5
    for key, value in changes.items():
        setattr(found, key, value)
    return found


def test_band_is_the_priority_on_the_router_the_objective_on_the_coordinator() -> None:
    assert band_of(finished(priority=-5, objective="gold")) == "-5"
    assert band_of(finished(objective="gold")) == ""
    assert band_of(finished("coordinator", objective="reserved-interactive")) == (
        "reserved-interactive"
    )
    assert status_class(204) == "2xx" and status_class(503) == "5xx"


@pytest.mark.parametrize("component", ["router", "coordinator"])
def test_counts_durations_and_stream_ttfb(component: str) -> None:
    registry = CollectorRegistry()
    metrics = HttpMetrics(component, registry)
    metrics.observe(finished(component, priority=3, stream=True))
    metrics.observe(finished(component, priority=3, stream=True))
    metrics.observe(finished(component, status=429, priority=3))
    prefix = f"sluiceway_{component}_http_"
    labels = {"route": "/v1/completions", "method": "POST", "band": "3"}
    assert registry.get_sample_value(prefix + "requests_total", {**labels, "status": "200"}) == 2
    assert registry.get_sample_value(prefix + "requests_total", {**labels, "status": "429"}) == 1
    ok = {"route": "/v1/completions", "status_class": "2xx", "band": "3"}
    assert registry.get_sample_value(prefix + "request_duration_seconds_count", ok) == 2
    assert registry.get_sample_value(prefix + "request_duration_seconds_sum", ok) == 3.0
    streams = {"route": "/v1/completions", "band": "3"}
    ttfb = prefix + "time_to_first_byte_seconds"
    assert registry.get_sample_value(ttfb + "_count", streams) == 2  # not the 429
    assert registry.get_sample_value(ttfb + "_bucket", {**streams, "le": "0.025"}) == 2
