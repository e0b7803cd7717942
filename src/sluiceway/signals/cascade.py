"""A cascade: the first source whose reading has a usable sample wins.

Used where one signal has several possible spellings (``prometheus-budget``'s three queries,
the two router prefixes). Logs one line when the winning source changes, never per read.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sluiceway.signals.base import MetricSource, Reading

__all__ = ["CascadeSource"]

log = logging.getLogger(__name__)


class CascadeSource:
    def __init__(self, sources: Sequence[MetricSource], *, name: str = "cascade") -> None:
        if not sources:
            raise ValueError("a cascade needs at least one source")
        self._sources = list(sources)
        self._name = name
        self._winner: int | None = None

    @property
    def key(self) -> str:
        return "cascade [" + " | ".join(s.key for s in self._sources) + "]"

    @property
    def winner(self) -> int | None:
        """Index of the source that answered last, None when none did."""
        return self._winner

    async def read(self) -> Reading:
        errors: list[str] = []
        for index, source in enumerate(self._sources):
            reading = await source.read()
            if reading.available:
                self._note(index)
                return reading
            errors.append(f"[{index}] {reading.why_blind()}")
        self._note(None)
        return Reading(error="; ".join(errors))

    def _note(self, index: int | None) -> None:
        if index != self._winner:
            log.info("%s: source %s answers (was %s)", self._name, index, self._winner)
            self._winner = index

    async def aclose(self) -> None:
        for source in self._sources:
            await source.aclose()
