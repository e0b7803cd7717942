"""Measured endpoint load: a vLLM reading plus the router's own counts since, and how long a
reading counts (virtual time; no I/O)."""

from __future__ import annotations

import math

import pytest

from sluiceway.clock import VirtualClock
from sluiceway.flowcontrol.saturation import ConcurrencyDetector, UtilizationDetector
from sluiceway.router.load import EndpointLoad
from sluiceway.router.measured_load import (
    EndpointReport,
    MeasuredLoad,
    Status,
    VllmReading,
    read_vllm,
    reading_lifetime,
)
from sluiceway.router.pool import EndpointPool

URL = "http://a"
PAGE = """# HELP vllm:num_requests_running Running.
vllm:num_requests_running{model_name="m",engine="0"} 3.0
vllm_num_requests_running{model_name="m",engine="1"} 2
vllm:num_requests_waiting{model_name="m",engine="0"} 1
vllm:num_requests_waiting{model_name="m",engine="1"} NaN
vllm:gpu_cache_usage_perc{model_name="m",engine="0"} 0.25
vllm:kv_cache_usage_perc{model_name="m",engine="1"} 0.5
vllm:num_requests_running_extra 99
"""


def test_a_page_gives_counts_summed_over_engines_and_the_fullest_kv() -> None:
    assert read_vllm(PAGE) == VllmReading(running=5, waiting=1, kv_usage=0.5)
    assert read_vllm("vllm:num_requests_waiting 4\n") == VllmReading(0, 4, 0.0)


def test_a_page_without_vllm_series_is_not_a_reading() -> None:
    assert read_vllm("# just a comment\nprocess_cpu_seconds_total 3\n") is None
    assert read_vllm("") is None


def _landed(load: MeasuredLoad, running: int, waiting: int, inflight: int, now: float) -> None:
    load.landed(URL, VllmReading(running, waiting, 0.3), inflight, now)


def test_dispatches_since_the_reading_count_at_once_and_finished_ones_stop_counting() -> None:
    load = MeasuredLoad(max_age=0.2)
    _landed(load, running=3, waiting=0, inflight=3, now=100.0)
    assert load.load(URL, 3, 100.0) == EndpointLoad(0, 0.3, 100.0, requests=3)
    assert load.load(URL, 5, 100.05).requests == 5  # two dispatched since: seen at once
    assert load.load(URL, 1, 100.1).requests == 1  # two of the three ended since
    _landed(load, running=5, waiting=0, inflight=5, now=100.1)  # the page holds the two
    assert load.load(URL, 5, 100.1).requests == 5  # not counted twice


def test_requests_the_router_did_not_send_count_until_a_reading_says_they_left() -> None:
    load = MeasuredLoad(max_age=0.2)
    _landed(load, running=6, waiting=1, inflight=3, now=100.0)  # four are another client's
    assert load.load(URL, 3, 100.0).requests == 7
    assert load.load(URL, 5, 100.01).requests == 9
    assert load.load(URL, 0, 100.02).requests == 4
    _landed(load, running=0, waiting=0, inflight=0, now=100.1)
    assert load.load(URL, 0, 100.1).requests == 0


def test_a_request_the_page_missed_still_counts_through_the_routers_own_count() -> None:
    load = MeasuredLoad(max_age=0.2)
    _landed(load, running=2, waiting=0, inflight=3, now=100.0)  # one not at the server yet
    assert load.load(URL, 3, 100.0).requests == 3
    assert load.load(URL, 4, 100.01).requests == 4


def test_a_reading_counts_for_max_age_then_the_routers_own_count_stands_in() -> None:
    clock = VirtualClock(start=128.0)
    load = MeasuredLoad(max_age=0.25)
    _landed(load, running=9, waiting=4, inflight=2, now=clock.now())
    clock.advance(0.25)  # the page hangs: no reading lands, none fails
    assert load.load(URL, 2, clock.now()) == EndpointLoad(4, 0.3, 128.0, requests=13)
    assert load.age(URL, clock.now()) == 0.25
    clock.advance(0.125)
    assert load.load(URL, 2, clock.now()) == EndpointLoad(2, 0.0, clock.now())
    assert load.age(URL, clock.now()) == math.inf
    assert load.report(clock.now()) == [EndpointReport(URL, 0, math.inf)]


def test_a_failed_scrape_drops_the_reading_at_once() -> None:
    load = MeasuredLoad(max_age=0.25)
    _landed(load, running=9, waiting=4, inflight=2, now=128.0)
    assert load.failed(URL) is Status.UNREADABLE
    assert load.load(URL, 2, 128.125) == EndpointLoad(2, 0.0, 128.125)
    assert load.report(128.125) == [EndpointReport(URL, 1, math.inf)]


def test_an_endpoint_never_read_or_not_vllm_is_read_on_the_routers_own_count() -> None:
    load = MeasuredLoad(max_age=0.2)
    assert load.load(URL, 4, 50.0) == EndpointLoad(4, 0.0, 50.0)
    _landed(load, running=9, waiting=9, inflight=0, now=50.0)
    assert load.landed(URL, None, 4, 50.1) is Status.NOT_VLLM  # the old reading is dropped
    assert load.load(URL, 4, 50.1) == EndpointLoad(4, 0.0, 50.1)


def test_each_status_is_announced_once_per_change() -> None:
    load = MeasuredLoad(max_age=0.2)
    reading = VllmReading(1, 0, 0.0)
    seen = [
        load.landed(URL, reading, 0, 1.0),
        load.landed(URL, reading, 0, 1.1),
        load.failed(URL),
        load.failed(URL),
        load.landed(URL, reading, 0, 1.4),
        load.landed(URL, None, 0, 1.5),
        load.landed(URL, None, 0, 1.6),
    ]
    assert seen[:5] == [Status.MEASURED, None, Status.UNREADABLE, None, Status.MEASURED]
    assert seen[5:] == [Status.NOT_VLLM, None]
    assert load.report(1.6) == [EndpointReport(URL, 2, math.inf)]


def test_endpoints_that_left_the_pool_are_forgotten() -> None:
    load = MeasuredLoad(max_age=0.2)
    load.landed("http://b", VllmReading(1, 0, 0.0), 0, 1.0)
    _landed(load, running=1, waiting=0, inflight=0, now=1.0)
    load.keep_only([URL])
    assert [r.url for r in load.report(1.0)] == [URL]


def test_a_reading_counts_two_intervals_but_never_past_the_utilization_staleness() -> None:
    assert reading_lifetime(0.1, ConcurrencyDetector()) == pytest.approx(0.2)
    assert reading_lifetime(1.0, None) == pytest.approx(2.0)
    assert reading_lifetime(0.05, UtilizationDetector(staleness=0.2)) == pytest.approx(0.1)
    assert reading_lifetime(1.0, UtilizationDetector(staleness=0.2)) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        MeasuredLoad(max_age=0)


def _pool(load: MeasuredLoad, clock: VirtualClock) -> EndpointPool:
    pool = EndpointPool([URL], clock, load=load)
    pool.mark(URL, True)
    return pool


def test_the_concurrency_detector_sees_the_server_and_a_stale_reading_never_holds_it() -> None:
    clock = VirtualClock(start=128.0)
    load = MeasuredLoad(max_age=0.25)
    pool = _pool(load, clock)
    detector = ConcurrencyDetector(max_concurrency=10)
    _landed(load, running=10, waiting=0, inflight=0, now=clock.now())  # another client's ten
    assert detector.view(pool.snapshots(clock.now()), clock.now()).saturation == 1.0
    pool.acquire(pool.members[URL], 1)  # a dispatch is seen by the next cycle
    assert detector.view(pool.snapshots(clock.now()), clock.now()).saturation == pytest.approx(1.1)
    clock.advance(0.375)  # no reading since: the router's own count, not "saturated"
    assert detector.view(pool.snapshots(clock.now()), clock.now()).saturation == pytest.approx(0.1)


def test_the_utilization_detector_is_never_handed_a_reading_it_would_call_stale() -> None:
    clock = VirtualClock(start=128.0)
    detector = UtilizationDetector(queue_depth_threshold=5, staleness=0.25)
    load = MeasuredLoad(max_age=reading_lifetime(0.125, detector))
    pool = _pool(load, clock)
    for member in [pool.members[URL]] * 2:
        pool.acquire(member, 1)
    load.landed(URL, VllmReading(running=2, waiting=0, kv_usage=0.0), 2, clock.now())
    seen = []
    for _ in range(5):  # the page hangs: no reading lands from here on
        view = detector.view(pool.snapshots(clock.now()), clock.now())
        seen.append((view.saturation, detector.stale_endpoints))
        clock.advance(0.125)
    # a fresh reading (nothing waiting), then the router's own two in flight as its queue
    assert seen == [(0.0, 0), (0.0, 0), (0.0, 0), (0.4, 0), (0.4, 0)]
