"""The ``MetricSource`` protocol and what a reading holds. Standard library only.

A source answers one :class:`Reading`: the matching samples, or an error. A reading with no
samples is *blind* as surely as an error (a query with no series, an absent metric), and so
is one whose first value is NaN or infinite: gates then use their configured fallback.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = ["MetricSource", "Reading", "Sample"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One series' value; ``name`` is the metric name when the source knows it."""

    value: float
    labels: Mapping[str, str] = field(default_factory=dict)
    name: str = ""


@dataclass(frozen=True, slots=True)
class Reading:
    """What a source answered: samples (best first) or an ``error``; ``at`` in scaled seconds."""

    samples: tuple[Sample, ...] = ()
    error: str = ""
    at: float = 0.0

    @property
    def value(self) -> float | None:
        """The first sample's value, None when blind (error, no sample, NaN or infinite)."""
        if self.error or not self.samples:
            return None
        value = self.samples[0].value
        return value if math.isfinite(value) else None

    @property
    def available(self) -> bool:
        return self.value is not None

    def why_blind(self) -> str:
        """A short reason for a blind reading ("" when it is not)."""
        if self.error:
            return self.error
        if not self.samples:
            return "no sample"
        return "" if self.available else f"value {self.samples[0].value}"


@runtime_checkable
class MetricSource(Protocol):
    """Where a signal comes from. ``key`` identifies the source: two sources with the same key
    read the same thing, so they share one refresher."""

    @property
    def key(self) -> str: ...

    async def read(self) -> Reading:
        """One fresh reading; never raises for I/O failures (they are ``Reading.error``)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
