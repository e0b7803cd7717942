"""Running requests counted by the value of chosen request headers, with the peak per value.

Backs the ``sluiceway_sim_running{header,value}`` gauge: tests read it to check "at most N
in flight per lane or team at every instant", so the maximum ever seen is kept too. Observers
that need every start and end (the demo, end-to-end tests) subscribe instead of sampling.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

__all__ = ["LabelCounts", "LabelListener"]

Labels = tuple[tuple[str, str], ...]
# Called with +1 when a request starts running and -1 when it stops, and its labels.
LabelListener = Callable[[int, Labels], None]


class LabelCounts:
    """Current and peak running counts per (header, value)."""

    def __init__(self, headers: tuple[str, ...]) -> None:
        self.headers = headers
        self._now: dict[str, Counter[str]] = {h: Counter() for h in headers}
        self._peak: dict[str, dict[str, int]] = {h: {} for h in headers}
        self._listeners: list[LabelListener] = []

    def subscribe(self, listener: LabelListener) -> Callable[[], None]:
        """Call ``listener`` on every start and end; returns the function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def enter(self, labels: Labels) -> None:
        for listener in self._listeners:
            listener(+1, labels)
        for header, value in labels:
            counts = self._now[header]
            counts[value] += 1
            peak = self._peak[header]
            if counts[value] > peak.get(value, 0):
                peak[value] = counts[value]

    def leave(self, labels: Labels) -> None:
        for listener in self._listeners:
            listener(-1, labels)
        for header, value in labels:
            self._now[header][value] -= 1

    def running(self, header: str) -> dict[str, int]:
        """Running count per value of ``header`` (values seen since start, zeros included)."""
        return dict(self._now.get(header.lower(), {}))

    def peak(self, header: str) -> dict[str, int]:
        """Largest running count ever seen per value of ``header``."""
        return dict(self._peak.get(header.lower(), {}))
