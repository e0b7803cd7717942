"""Learned patience: nothing until enough hang-ups, then a quantile of the recent ones, per
tenant; it only ever shortens a deadline, and old samples age out."""

from __future__ import annotations

from sluiceway.config.coordinator import Patience
from sluiceway.coordinator.patience import PatienceBook, PatienceSettings, patience_settings


def test_nothing_is_learned_from_too_few_hang_ups() -> None:
    book = PatienceBook(PatienceSettings(min_samples=3))
    book.observe("batch", 20.0, now=0.0)
    book.observe("batch", 22.0, now=1.0)
    assert book.learned("batch", now=2.0) is None
    assert book.deadline_seconds("batch", 300.0, now=2.0) == 300.0


def test_the_median_of_the_recent_hang_ups_cuts_the_deadline() -> None:
    book = PatienceBook(PatienceSettings(min_samples=3))
    for n, waited in enumerate((30.0, 18.0, 20.0, 22.0, 19.0)):
        book.observe("batch", waited, now=float(n))
    assert book.learned("batch", now=5.0) == 20.0
    assert book.deadline_seconds("batch", 300.0, now=5.0) == 20.0
    assert book.deadline_seconds("batch", 10.0, now=5.0) == 10.0  # never lengthens
    assert book.learned("premium", now=5.0) is None  # per tenant


def test_old_hang_ups_age_out_and_the_window_keeps_the_last() -> None:
    book = PatienceBook(PatienceSettings(min_samples=2, window=3, max_age=100.0))
    for n in range(5):
        book.observe("batch", 10.0 + n, now=float(n))
    assert book.learned("batch", now=5.0) == 13.0  # of 12, 13, 14
    assert book.learned("batch", now=200.0) is None


def test_turned_off_it_learns_nothing_and_settings_come_from_the_config() -> None:
    settings = patience_settings(Patience(learn=False, min_samples=1))
    book = PatienceBook(settings)
    book.observe("batch", 5.0, now=0.0)
    assert book.learned("batch", now=1.0) is None and book.tenants() == []
    assert patience_settings(Patience()).quantile == 0.5
