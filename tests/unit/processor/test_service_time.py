"""The service-time estimate: the prior until enough answers, then their median, per queue;
a request is infeasible when less time is left than the estimate, never with nothing known."""

from __future__ import annotations

from sluiceway.processor.service_time import ServiceTimes, ServiceTimeSettings


def test_the_prior_holds_until_enough_answers() -> None:
    times = ServiceTimes(ServiceTimeSettings(prior=4.0, min_samples=3))
    times.observe("q", 1.0)
    times.observe("q", 1.0)
    assert times.estimate("q") == 4.0
    times.observe("q", 2.0)
    assert times.estimate("q") == 1.0
    assert times.estimate("other") == 4.0


def test_the_median_of_the_last_window() -> None:
    times = ServiceTimes(ServiceTimeSettings(min_samples=1, window=3))
    for seconds in (10.0, 10.0, 10.0, 1.0, 2.0, 3.0):
        times.observe("q", seconds)
    assert times.estimate("q") == 2.0  # the old 10 s answers left the window


def test_infeasible_only_when_less_time_is_left_than_the_estimate() -> None:
    times = ServiceTimes(ServiceTimeSettings(min_samples=1))
    assert times.shortfall("q", remaining=0.001) is None  # nothing known: never refused
    times.observe("q", 2.0)
    assert times.shortfall("q", remaining=1.9) == 2.0
    assert times.shortfall("q", remaining=2.0) is None
    off = ServiceTimes(ServiceTimeSettings(enabled=False, prior=5.0))
    assert off.shortfall("q", remaining=0.1) is None and off.estimate("q") == 5.0


def test_negative_times_are_ignored() -> None:
    times = ServiceTimes(ServiceTimeSettings(min_samples=1))
    times.observe("q", -1.0)
    assert times.queues() == [] and times.estimate("q") == 0.0
