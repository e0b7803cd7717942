"""How late the event loop runs: the gauge that shows an overloaded simulator.

Every ``interval`` wall seconds a timer is due; how much later than due it actually runs is the
loop's lag, the delay every token write of this process suffers too. The gauge reports the
largest lag of the last ``window`` samples (about one second), so a scrape every few seconds
still sees a spike. The interval is short (20 ms) so that stalls of a few milliseconds, the
size that matters to a 10 ms inter-token latency, are usually caught; a timer callback costs
a few microseconds. A measurement, not a poll: nothing waits on it.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["LoopLagProbe"]


class LoopLagProbe:
    """Samples the running loop's timer lateness while started (wall seconds)."""

    def __init__(self, *, interval: float = 0.02, window: int = 50) -> None:
        self.interval = interval
        self._samples: deque[float] = deque(maxlen=window)
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0

    @property
    def lag(self) -> float:
        """The largest lag of the recent samples, 0.0 before the first."""
        return max(self._samples, default=0.0)

    def start(self) -> None:
        self._arm(asyncio.get_running_loop())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        self._due = loop.time() + self.interval
        self._handle = loop.call_at(self._due, self._fire, loop)

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._samples.append(max(0.0, loop.time() - self._due))
        self._arm(loop)
