"""How long a request of each queue takes once dispatched, learned from the ones that finished.

The processor must not start a request that cannot finish before its deadline: the model's time
would go to an answer nobody receives, and the client would wait for a 504 it could have had at
once. The estimate is a quantile (the median by default) of the last ``window`` dispatch-to-
answer times of the queue's successful attempts no older than ``max_age``; until ``min_samples``
are known it is the configured prior (0: refuse nothing until something is known). Samples age
out so that an estimate learned during an overload cannot refuse everything forever: with no
recent answers the prior applies again and new requests are let through to be measured. Pure:
times are passed in.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["ServiceTimeSettings", "ServiceTimes"]


@dataclass(frozen=True, slots=True)
class ServiceTimeSettings:
    """``prior``: seconds assumed before ``min_samples`` answers; ``enabled``: refuse requests
    that cannot finish (the estimate is kept and exported either way); ``max_age``: scaled
    seconds a sample counts."""

    enabled: bool = True
    prior: float = 0.0
    min_samples: int = 5
    window: int = 64
    quantile: float = 0.5
    max_age: float = 60.0


class ServiceTimes:
    def __init__(self, settings: ServiceTimeSettings | None = None) -> None:
        self.settings = settings or ServiceTimeSettings()
        self._samples: dict[str, deque[tuple[float, float]]] = {}
        # the quantile of each queue, recomputed only when its samples change (it is read on
        # every admission and pickup, changed once per answer)
        self._cached: dict[str, float] = {}

    def observe(self, queue: str, seconds: float, now: float) -> None:
        """A request of ``queue`` was answered ``seconds`` after its dispatch, at ``now``."""
        if seconds < 0:
            return
        kept = self._samples.get(queue)
        if kept is None:
            kept = self._samples[queue] = deque(maxlen=self.settings.window)
        kept.append((now, seconds))
        self._cached.pop(queue, None)

    def estimate(self, queue: str, now: float) -> float:
        """Seconds a request of ``queue`` is expected to take from dispatch to answer."""
        s = self.settings
        kept = self._samples.get(queue)
        while kept and now - kept[0][0] > s.max_age:
            kept.popleft()
            self._cached.pop(queue, None)
        if not kept or len(kept) < s.min_samples:
            return s.prior
        cached = self._cached.get(queue)
        if cached is None:
            ordered = sorted(seconds for _, seconds in kept)
            cached = self._cached[queue] = ordered[
                min(len(ordered) - 1, int(s.quantile * len(ordered)))
            ]
        return cached

    def shortfall(self, queue: str, remaining: float, now: float) -> float | None:
        """The estimate when ``remaining`` seconds to the deadline are less than it (the
        request is answered at once instead of started), else None."""
        if not self.settings.enabled:
            return None
        needed = self.estimate(queue, now)
        return needed if needed > 0 and remaining < needed else None

    def queues(self) -> list[str]:
        return sorted(self._samples)
