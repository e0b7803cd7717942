"""How long each tenant's wait-mode clients really wait, learned from the ones that gave up.

A client may declare a timeout (``x-request-timeout-seconds``) and still hang up sooner. Work
done for it after that reaches nobody, so the coordinator sets the envelope's deadline to the
smaller of the declared timeout and the tenant's learned patience: the processor then refuses
at once what cannot finish in time instead of running it for no one.

Samples are the waits of wait-mode clients that disconnected before their answer. The learned
patience is a quantile (the median by default) of the recent ones, once there are enough; old
samples age out, so a tenant whose clients grow more patient gets its declared timeouts back.
Pure: times are passed in.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from sluiceway.config.coordinator import Patience

__all__ = ["PatienceBook", "PatienceSettings", "patience_settings"]


@dataclass(frozen=True, slots=True)
class PatienceSettings:
    """``min_samples`` disconnects within ``max_age`` seconds before a patience is learned;
    the last ``window`` are kept per tenant."""

    enabled: bool = True
    min_samples: int = 5
    window: int = 32
    quantile: float = 0.5
    max_age: float = 600.0


def patience_settings(params: Patience) -> PatienceSettings:
    """The settings of the coordinator config's ``patience`` block."""
    return PatienceSettings(
        params.learn, params.min_samples, params.window, params.quantile, params.max_age_seconds
    )


class PatienceBook:
    def __init__(self, settings: PatienceSettings | None = None) -> None:
        self.settings = settings or PatienceSettings()
        self._samples: dict[str, deque[tuple[float, float]]] = {}

    def observe(self, tenant: str, waited: float, now: float) -> None:
        """A wait-mode client of ``tenant`` left after ``waited`` seconds without its answer."""
        if not self.settings.enabled or waited < 0:
            return
        kept = self._samples.get(tenant)
        if kept is None:
            kept = self._samples[tenant] = deque(maxlen=self.settings.window)
        kept.append((now, waited))

    def learned(self, tenant: str, now: float) -> float | None:
        """The tenant's patience in seconds, or None while too little is known."""
        s = self.settings
        kept = self._samples.get(tenant)
        if not s.enabled or not kept:
            return None
        recent = sorted(waited for at, waited in kept if now - at <= s.max_age)
        if len(recent) < s.min_samples:
            return None
        return recent[min(len(recent) - 1, int(s.quantile * len(recent)))]

    def deadline_seconds(self, tenant: str, declared: float, now: float) -> float:
        """Seconds to the deadline: the declared (or default) timeout, cut to the patience."""
        patience = self.learned(tenant, now)
        return declared if patience is None else min(declared, patience)

    def tenants(self) -> list[str]:
        return sorted(self._samples)
