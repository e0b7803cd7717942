"""The service-time estimate: the prior until enough answers, then their median, per queue;
a request is infeasible when less time is left than the estimate, never with nothing known."""

from __future__ import annotations

from sluiceway.processor.service_time import ServiceTimes, ServiceTimeSettings


def test_the_prior_holds_until_enough_answers() -> None:
    times = ServiceTimes(ServiceTimeSettings(prior=4.0, min_samples=3))
    times.observe("q", 1.0, 0.0)
    times.observe("q", 1.0, 0.0)
    assert times.estimate("q", 0.0) == 4.0
    times.observe("q", 2.0, 0.0)
    assert times.estimate("q", 0.0) == 1.0
    assert times.estimate("other", 0.0) == 4.0


def test_the_median_of_the_last_window() -> None:
    times = ServiceTimes(ServiceTimeSettings(min_samples=1, window=3))
    for seconds in (10.0, 10.0, 10.0, 1.0, 2.0, 3.0):
        times.observe("q", seconds, 0.0)
    assert times.estimate("q", 0.0) == 2.0  # the old 10 s answers left the window


def test_infeasible_only_when_less_time_is_left_than_the_estimate() -> None:
    times = ServiceTimes(ServiceTimeSettings(min_samples=1))
    assert times.shortfall("q", 0.001, 0.0) is None  # nothing known: never refused
    times.observe("q", 2.0, 0.0)
    assert times.shortfall("q", 1.9, 0.0) == 2.0
    assert times.shortfall("q", 2.0, 0.0) is None
    off = ServiceTimes(ServiceTimeSettings(enabled=False, prior=5.0))
    assert off.shortfall("q", 0.1, 0.0) is None and off.estimate("q", 0.0) == 5.0


def test_old_answers_age_out_so_an_overload_cannot_refuse_everything_forever() -> None:
    """Learned during an overload, a long estimate would refuse every request, and with
    nothing dispatched nothing new is learned: the samples age out and the prior returns."""
    times = ServiceTimes(ServiceTimeSettings(min_samples=1, max_age=60.0))
    times.observe("q", 30.0, now=100.0)
    assert times.shortfall("q", 20.0, now=150.0) == 30.0
    assert times.shortfall("q", 20.0, now=161.0) is None and times.estimate("q", 161.0) == 0.0


def test_negative_times_are_ignored() -> None:
    times = ServiceTimes(ServiceTimeSettings(min_samples=1))
    times.observe("q", -1.0, 0.0)
    assert times.queues() == [] and times.estimate("q", 0.0) == 0.0


def test_a_higher_quantile_refuses_what_the_slow_tail_would_miss() -> None:
    times = ServiceTimes(ServiceTimeSettings(min_samples=1, quantile=0.9))
    for seconds in range(1, 11):  # 1 s .. 10 s
        times.observe("q", float(seconds), 0.0)
    assert times.estimate("q", 0.0) == 10.0  # the 9th of 10 ranks, counted from 0
    assert times.shortfall("q", 8.0, 0.0) == 10.0  # the median (6 s) would have started it
