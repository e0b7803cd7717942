"""A reading is blind on an error, without samples, or on a non-finite value."""

from __future__ import annotations

import math

from sluiceway.signals.base import MetricSource, Reading, Sample

from .fakes import SetSource


def test_a_usable_reading_gives_its_first_value() -> None:
    reading = Reading((Sample(0.3), Sample(0.9)))
    assert reading.available and reading.value == 0.3 and reading.why_blind() == ""


def test_blind_readings_say_why() -> None:
    assert Reading(error="timeout").why_blind() == "timeout"
    assert Reading().why_blind() == "no sample"
    nan = Reading((Sample(math.nan),))
    assert nan.value is None and not nan.available and nan.why_blind() == "value nan"
    assert Reading((Sample(math.inf),)).value is None


def test_fake_source_meets_the_protocol() -> None:
    assert isinstance(SetSource(1.0), MetricSource)
