"""Histograms and vLLM's bucket bounds."""

from __future__ import annotations

from sluiceway.sim.stats import EngineStats, Histogram, buckets_1_2_5


def test_1_2_5_bounds_stop_at_the_maximum_as_vllms() -> None:
    assert buckets_1_2_5(100) == (1, 2, 5, 10, 20, 50, 100)
    assert buckets_1_2_5(1024)[-1] == 1000


def test_histogram_counts_cumulate_and_zeros_land_in_the_first_bucket() -> None:
    hist = Histogram((0.1, 1.0))
    for value in (0.05, 0.5, 5.0):
        hist.observe(value)
    hist.observe_zeros(2)
    assert hist.cumulative() == [(0.1, 3), (1.0, 4), (float("inf"), 5)]
    assert hist.count == 5 and hist.total == 5.55


def test_token_histograms_follow_max_model_len() -> None:
    stats = EngineStats(max_model_len=50)
    assert stats.prompt_tokens_per_request.bounds == (1, 2, 5, 10, 20, 50)
