"""Per-endpoint load as the router's detector and picker see it.

:class:`LoadSource` is the seam. :class:`InFlightLoad` knows only what the router itself sees:
its own in-flight requests to each endpoint count as that endpoint's queue, KV usage reads 0
and the sample is always fresh. :class:`~sluiceway.router.measured_load.MeasuredLoad` (the
default while ``metrics_scrape_interval`` > 0) reads each endpoint's vLLM metrics, with the
router's own counts between readings.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

__all__ = ["EndpointLoad", "InFlightLoad", "LoadSource"]


class EndpointLoad(NamedTuple):
    """``waiting``: requests queued at the endpoint; ``kv_usage``: KV-cache use in [0, 1];
    ``scraped_at``: Unix seconds of the sample; ``requests``: requests at the endpoint, running
    or waiting, whoever sent them (None: the router's own in-flight count stands for it).
    None = unknown."""

    waiting: int | None
    kv_usage: float | None
    scraped_at: float | None
    requests: int | None = None


class LoadSource(Protocol):
    """Where endpoint load comes from."""

    def load(self, url: str, inflight: int, now: float) -> EndpointLoad:
        """The load of endpoint ``url``; ``inflight`` is the router's own count to it."""
        ...


class InFlightLoad:
    """The router's own view: in-flight requests as the queue, no KV data, always fresh."""

    def load(self, url: str, inflight: int, now: float) -> EndpointLoad:
        return EndpointLoad(inflight, 0.0, now)
