"""Settings of one router process: frozen, passed whole, so every part reads the same values.

Durations are scaled seconds (the process clock's time scale applies to them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sluiceway.errors import ConfigError
from sluiceway.ledger.leases import LedgerSettings
from sluiceway.observability.access_log import check_sample
from sluiceway.router.limits import RequestLimits

__all__ = ["DEFAULT_METRICS_SCRAPE_INTERVAL", "DEFAULT_POOL_NAME", "RouterSettings"]

DEFAULT_POOL_NAME = "sluiceway"
# Short enough that a reading is never older than the utilization detector's default staleness
# threshold (200 ms) between two scrapes; a page costs the router well under a millisecond.
DEFAULT_METRICS_SCRAPE_INTERVAL = 0.1


@dataclass(frozen=True, slots=True)
class RouterSettings:
    """``endpoints``: model server base URLs. ``pool_name``: the ``inference_pool`` label and
    the objectives filter (None = every objective applies). ``health_interval``: seconds
    between health checks; ``health_timeout``: seconds one check may take; ``drain_timeout``:
    seconds running streams get to finish after SIGTERM; ``upstream_timeout``: seconds one
    request's upstream calls may take in total, retries included (0 = no limit);
    ``upstream_retries``: how many times a request whose endpoint failed before the response
    is moved to another; ``models_interval``: seconds between asking every endpoint for its
    models (0 = only when it joins or turns healthy); ``limits``: how large a request may be
    (body and headers). ``metrics_scrape_interval``: seconds between scrapes of every
    endpoint's ``/metrics`` for its load (0 = the router's own counts only).
    ``access_log_sample``: the fraction of requests written to the access log (0 = off; the
    command's ``--access-log-sample`` defaults to 1). ``ledger``: the Redis ledger several
    replicas of one pool share its capacity through (None: this replica alone)."""

    endpoints: tuple[str, ...] = ()
    pool_name: str | None = None
    health_interval: float = 1.0
    health_timeout: float = 2.0
    drain_timeout: float = 30.0
    upstream_timeout: float = 0.0
    upstream_retries: int = 2
    models_interval: float = 10.0
    prefix_affinity: bool = False
    limits: RequestLimits = field(default_factory=RequestLimits)
    metrics_scrape_interval: float = DEFAULT_METRICS_SCRAPE_INTERVAL
    access_log_sample: float = 0.0
    ledger: LedgerSettings | None = None

    def __post_init__(self) -> None:
        for name in ("health_interval", "health_timeout"):
            if getattr(self, name) <= 0:
                raise ConfigError("must be > 0", field=f"--{name.replace('_', '-')}")
        for name in ("drain_timeout", "upstream_timeout", "upstream_retries", "models_interval"):
            if getattr(self, name) < 0:
                raise ConfigError("must be >= 0", field=f"--{name.replace('_', '-')}")
        if self.metrics_scrape_interval < 0:
            raise ConfigError("must be >= 0", field="--metrics-scrape-interval")
        check_sample(self.access_log_sample)
        for url in self.endpoints:
            if not url.startswith(("http://", "https://")):
                raise ConfigError(f"{url!r} is not an http(s) URL", field="--endpoints")

    @property
    def pool_label(self) -> str:
        """The ``inference_pool`` metric label."""
        return self.pool_name or DEFAULT_POOL_NAME
