"""Kubernetes quantities and Go durations."""

from __future__ import annotations

import pytest

from sluiceway.config.quantities import parse_duration, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1k", 1000),
        ("10Gi", 10 * 2**30),
        ("1G", 10**9),
        ("500", 500),
        ("1.5k", 1500),
        ("100m", 0.1),
        ("2Mi", 2 * 2**20),
        (7, 7),
        ("1e3", 1000),
    ],
)
def test_quantities(text: str | int, value: float) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["ten", "1KB", "", "1 k", True])
def test_bad_quantities(text: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("300s", 300.0), ("1m30s", 90.0), ("200ms", 0.2), ("1h", 3600.0), ("2.5", 2.5), (4, 4.0)],
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5 minutes", "1d", "s", "1m x"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_a_duration_past_a_double_is_a_value_error() -> None:
    """10**400 seconds once raised OverflowError, which check-config printed as a traceback
    (found by tests/fuzz/test_fuzz_config.py)."""
    with pytest.raises(ValueError, match="a double can hold"):
        parse_duration(10**400)
