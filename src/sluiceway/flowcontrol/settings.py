"""Flow-control settings: frozen dataclasses, passed whole.

Durations are seconds (scaled); sizes bytes; 0 disables a limit where noted. Defaults follow
the upstream router, so its configs behave the same here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sluiceway.errors import ConfigError
from sluiceway.flowcontrol.base import FairnessPolicy, OrderingPolicy, UsageLimitPolicy
from sluiceway.flowcontrol.fairness.global_strict import GlobalStrict
from sluiceway.flowcontrol.ordering import FCFS
from sluiceway.flowcontrol.usage.static import StaticUsageLimit

__all__ = ["BandSettings", "EvictionSettings", "FlowControlSettings"]

DEFAULT_BAND_MAX_BYTES = 1_000_000_000
DEFAULT_BAND_MAX_REQUESTS = 5000


@dataclass(frozen=True, slots=True)
class BandSettings:
    """One priority band. ``max_bytes`` / ``max_requests`` <= 0 take the defaults (a band is
    never unlimited, as upstream)."""

    priority: int = 0
    max_bytes: int = DEFAULT_BAND_MAX_BYTES
    max_requests: int = DEFAULT_BAND_MAX_REQUESTS
    fairness: FairnessPolicy = field(default_factory=GlobalStrict)
    ordering: OrderingPolicy = field(default_factory=FCFS)

    def __post_init__(self) -> None:
        if self.max_bytes <= 0:
            object.__setattr__(self, "max_bytes", DEFAULT_BAND_MAX_BYTES)
        if self.max_requests <= 0:
            object.__setattr__(self, "max_requests", DEFAULT_BAND_MAX_REQUESTS)

    def at(self, priority: int) -> BandSettings:
        """This template for another priority (dynamic bands)."""
        return BandSettings(
            priority,
            self.max_bytes,
            self.max_requests,
            fairness=self.fairness,
            ordering=self.ordering,
        )


@dataclass(frozen=True, slots=True)
class EvictionSettings:
    """In-flight eviction of ``priority < 0`` requests (``enableEviction``).

    ``grace``: seconds a confirmed revocation's debit keeps cooling (sensor lag);
    ``timeout``: seconds after which an unconfirmed revocation counts as confirmed (timed out).
    """

    enabled: bool = False
    max_per_decision: int = 2
    grace: float = 0.5
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.max_per_decision < 1:
            raise ConfigError("must be >= 1", field="eviction.max_per_decision")
        if self.grace < 0:
            raise ConfigError("must be >= 0", field="eviction.grace")
        if self.timeout <= 0:
            raise ConfigError("must be > 0", field="eviction.timeout")


@dataclass(frozen=True, slots=True)
class FlowControlSettings:
    """The whole flow controller. ``max_bytes`` / ``max_requests``: global caps, 0 = none.

    ``default_ttl``: queue-wait budget while the pool has endpoints (0 = no expiry).
    ``no_endpoint_ttl``: budget while the pool is empty; None follows ``default_ttl``.
    ``bands``: static bands; band 0 is always added. ``default_band`` /
    ``default_negative_band``: templates for bands provisioned from objectives.
    """

    max_bytes: int = 0
    max_requests: int = 0
    default_ttl: float = 60.0
    no_endpoint_ttl: float | None = None
    bands: tuple[BandSettings, ...] = ()
    default_band: BandSettings = field(default_factory=BandSettings)
    default_negative_band: BandSettings | None = None
    usage_limit: UsageLimitPolicy = field(default_factory=StaticUsageLimit)
    eviction: EvictionSettings = field(default_factory=EvictionSettings)
    flow_gc_timeout: float = 300.0

    def __post_init__(self) -> None:
        seen: set[int] = set()
        for i, band in enumerate(self.bands):
            if band.priority in seen:
                raise ConfigError(
                    f"duplicate priority {band.priority}", field=f"priorityBands[{i}].priority"
                )
            seen.add(band.priority)
        for name in ("max_bytes", "max_requests", "default_ttl", "flow_gc_timeout"):
            if getattr(self, name) < 0:
                raise ConfigError("must be >= 0", field=name)
        if self.no_endpoint_ttl is not None and self.no_endpoint_ttl < 0:
            raise ConfigError("must be >= 0", field="no_endpoint_ttl")

    @property
    def empty_pool_ttl(self) -> float:
        """Budget while the pool has no endpoints (seconds, 0 = no expiry)."""
        return self.default_ttl if self.no_endpoint_ttl is None else self.no_endpoint_ttl

    def template_for(self, priority: int) -> BandSettings:
        """Settings for a band provisioned dynamically at ``priority``."""
        if priority < 0 and self.default_negative_band is not None:
            return self.default_negative_band.at(priority)
        return self.default_band.at(priority)

    def initial_bands(self) -> list[BandSettings]:
        """Static bands plus band 0, priority descending."""
        bands = {b.priority: b for b in self.bands}
        bands.setdefault(0, self.template_for(0))
        return [bands[p] for p in sorted(bands, reverse=True)]
