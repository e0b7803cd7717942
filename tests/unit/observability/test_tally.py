"""Tallies expose what prometheus_client's own Counter and Histogram expose for the same events,
byte for byte, in the text format and in OpenMetrics, with and without ``_created``."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.registry import Collector

from sluiceway.observability.tally import TallyCounter, TallyHistogram

LABELS = ("queue_id", "pool_name")
# Bounds whose `le` strings differ in form (0.0, 0.5, 1e+06, 1.8e+06, 2.5e+07).
BUCKETS = (0, 0.5, 10, 250, 1e3, 1e6, 1.8e6, 2.5e7)
EXPOSITIONS: dict[str, Callable[[Collector], bytes]] = {
    "text": generate_latest,
    "openmetrics": openmetrics_latest,
}
# Observations on, just above and just below bounds, past the last one, negative, fractional.
OBSERVED = (0, 0.0, 0.1, 0.5, 0.5000001, 10, 9.999, 1e3, 999_999.9, 1.8e6, 3e7, float("inf"), -2)


class FakeClock:
    """Wall time both implementations read when they create a series."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.25

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(time, "time", fake)
    return fake


@pytest.fixture(params=[True, False], ids=["created", "no-created"])
def created(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    """prometheus_client's switch (PROMETHEUS_DISABLE_CREATED_SERIES at import, or
    disable_created_metrics()), set for both implementations."""
    monkeypatch.setattr(prometheus_metrics, "_use_created", request.param)
    yield request.param


def _drive(
    clock: FakeClock,
    requests: Callable[..., Any],
    tokens: Callable[..., Any],
    latency: Callable[..., Any],
) -> None:
    """The same events for either implementation (``labels`` of three families)."""
    for step, (queue, observed) in enumerate(zip(itertools.cycle("bab"), OBSERVED, strict=False)):
        clock.now += 0.125 * step
        requests(queue, "p").inc()
        tokens(queue, "p", "output").inc(step * 7)
        tokens(queue, "p", "input").inc(0.5)
        latency(queue, "p").observe(observed)
    requests("idle", "p")  # looked up, never moved: exported at 0
    latency("idle", "p")


def _both(clock: FakeClock) -> tuple[CollectorRegistry, CollectorRegistry]:
    plain, tally = CollectorRegistry(), CollectorRegistry()
    doc, token_labels = "First attempts of requests.", [*LABELS, "direction"]
    _drive(
        clock,
        Counter("x_request_total", doc, LABELS, registry=plain).labels,
        Counter("x_tokens_total", "Tokens.", token_labels, registry=plain).labels,
        Histogram("x_latency_ms", "Latency.", LABELS, buckets=BUCKETS, registry=plain).labels,
    )
    clock.now = 1_700_000_000.25
    requests = TallyCounter("x_request_total", doc, LABELS, registry=tally)
    tokens = TallyCounter("x_tokens_total", "Tokens.", token_labels, registry=tally)
    latency = TallyHistogram("x_latency_ms", "Latency.", LABELS, buckets=BUCKETS, registry=tally)
    _drive(clock, requests.labels, tokens.labels, latency.labels)
    return plain, tally


@pytest.mark.parametrize("exposition", EXPOSITIONS)
def test_the_exposition_is_prometheus_clients_byte_for_byte(
    clock: FakeClock, created: bool, exposition: str
) -> None:
    plain, tally = _both(clock)
    expected = EXPOSITIONS[exposition](plain)
    assert EXPOSITIONS[exposition](tally) == expected
    assert (b"x_latency_ms_created" in expected) is created
    assert b'le="1.8e+06"' in expected and b'queue_id="idle"' in expected


def test_created_is_the_wall_time_a_series_was_first_looked_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(prometheus_metrics, "_use_created", True)
    before = time.time()
    counter = TallyCounter("x_total", "X.", ["q"])
    histogram = TallyHistogram("x_ms", "X.", ["q"], buckets=[1])
    counter.labels("a")
    histogram.labels("a")
    after = time.time()
    counter.labels("a").inc()
    histogram.labels("a").observe(2)
    registry = CollectorRegistry()
    registry.register(counter)
    registry.register(histogram)
    for name in ("x_created", "x_ms_created"):
        stamp = registry.get_sample_value(name, {"q": "a"})
        assert stamp is not None and before <= stamp <= after


def test_a_histogram_counts_by_upper_bound_inclusive() -> None:
    histogram = TallyHistogram("x_ms", "X.", [], buckets=[1, 5, float("inf")])
    for value in (0.5, 1, 1.0001, 5, 7, float("inf")):
        histogram.labels().observe(value)
    assert histogram.labels().counts == [2, 2, 2]
    registry = CollectorRegistry()
    registry.register(histogram)
    get = registry.get_sample_value
    assert [get("x_ms_bucket", {"le": le}) for le in ("1.0", "5.0", "+Inf")] == [2, 4, 6]
    assert get("x_ms_count") == 6


def test_misuse_fails_as_in_prometheus_client() -> None:
    counter = TallyCounter("x_total", "X.", ["q"])
    with pytest.raises(ValueError, match="non-negative"):
        counter.labels("a").inc(-1)
    with pytest.raises(ValueError, match="label values"):
        counter.labels("a", "b")
    with pytest.raises(ValueError, match="sorted"):
        TallyHistogram("x_ms", "X.", [], buckets=[5, 1])
    with pytest.raises(ValueError, match="two buckets"):
        TallyHistogram("x_ms", "X.", [], buckets=[float("inf")])


def test_the_registry_knows_a_tallys_sample_names() -> None:
    registry = CollectorRegistry()
    TallyCounter("x_total", "X.", ["q"], registry=registry).labels("a").inc()
    TallyHistogram("y_ms", "Y.", ["q"], buckets=[1], registry=registry).labels("a")
    with pytest.raises(ValueError, match="Duplicated"):
        Counter("x", "X again.", ["q"], registry=registry)
    restricted = generate_latest(registry.restricted_registry(["y_ms_count"])).decode()
    assert restricted.splitlines()[-1] == 'y_ms_count{q="a"} 0.0'
    assert "x_total" not in restricted


def test_a_scrape_on_another_thread_sees_series_being_added() -> None:
    counter = TallyCounter("x_total", "X.", ["q"])
    stop = threading.Event()
    errors: list[BaseException] = []

    def scrape() -> None:
        while not stop.is_set():
            try:
                counter.collect()
            except BaseException as exc:  # a dict changed size during iteration, say
                errors.append(exc)
                return

    scraper = threading.Thread(target=scrape)
    scraper.start()
    try:
        for n in range(20_000):
            counter.labels(str(n)).inc()
    finally:
        stop.set()
        scraper.join()
    assert errors == []
    totals = [s for s in counter.collect()[0].samples if s.name == "x_total"]
    assert len(totals) == 20_000
