"""Per-endpoint load as the router's detector and picker see it.

:class:`LoadSource` is the seam for scraped model-server metrics (queue depth, KV-cache
usage). The default, :class:`InFlightLoad`, knows only what the router itself sees: its own
in-flight requests to each endpoint count as that endpoint's queue, KV usage reads 0 and the
sample is always fresh. A scraper-backed source returns the last scrape per endpoint with its
timestamp (so the utilization detector can judge staleness) and calls the router's ``kick``
when a scrape lands.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

__all__ = ["EndpointLoad", "InFlightLoad", "LoadSource"]


class EndpointLoad(NamedTuple):
    """``waiting``: requests queued at the endpoint; ``kv_usage``: KV-cache use in [0, 1];
    ``scraped_at``: Unix seconds of the sample. None = unknown."""

    waiting: int | None
    kv_usage: float | None
    scraped_at: float | None


class LoadSource(Protocol):
    """Where endpoint load comes from."""

    def load(self, url: str, inflight: int, now: float) -> EndpointLoad:
        """The load of endpoint ``url``; ``inflight`` is the router's own count to it."""
        ...


class InFlightLoad:
    """The router's own view: in-flight requests as the queue, no KV data, always fresh."""

    def load(self, url: str, inflight: int, now: float) -> EndpointLoad:
        return EndpointLoad(inflight, 0.0, now)
