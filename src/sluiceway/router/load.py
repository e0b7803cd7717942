"""Per-endpoint load as the router's detector and picker see it.

:class:`LoadSource` is the seam for scraped model-server metrics (queue depth, KV-cache
usage). The default, :class:`InFlightLoad`, knows only what the router itself sees: its own
in-flight requests to each endpoint count as that endpoint's queue, KV usage reads 0 and the
sample is always fresh. A scraper-backed source returns the last scrape per endpoint with its
timestamp (so the utilization detector can judge staleness) and calls the router's ``kick``
when a scrape lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

import aiohttp

from sluiceway.clock import Clock
from sluiceway.observability import names
from sluiceway.signals.scrape import parse_metrics, select

__all__ = ["EndpointLoad", "InFlightLoad", "LoadSource", "ScrapedLoad"]


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


class ScrapedLoad:
    """Each endpoint's last ``/metrics`` scrape: ``vllm:num_requests_waiting`` and
    ``vllm:kv_cache_usage_perc`` (any accepted spelling), stamped with the router's clock.

    :meth:`run` scrapes every endpoint each ``interval`` scaled seconds and calls ``on_scrape``
    after each round (the router's ``kick``: capacity may have changed). An endpoint never
    scraped, or whose page cannot be read, falls back to the router's own in-flight view with
    the time of its last good scrape, so the utilization detector sees it as stale.
    """

    def __init__(self, clock: Clock, *, timeout: float = 2.0) -> None:
        self._clock = clock
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._last: dict[str, EndpointLoad] = {}

    def load(self, url: str, inflight: int, now: float) -> EndpointLoad:
        found = self._last.get(url)
        if found is None:
            return EndpointLoad(inflight, 0.0, now)
        return found

    def record(self, url: str, text: str) -> None:
        """Keep what one scrape of ``url`` found."""
        samples = parse_metrics(text)
        waiting = select(samples, names.VLLM_NUM_REQUESTS_WAITING)
        kv = select(samples, names.VLLM_KV_CACHE_USAGE_PERC)
        self._last[url] = EndpointLoad(
            int(sum(s.value for s in waiting)) if waiting else None,
            max(s.value for s in kv) if kv else None,
            self._clock.now(),
        )

    async def scrape(self, session: aiohttp.ClientSession, url: str) -> None:
        try:
            async with session.get(f"{url}/metrics", timeout=self._timeout) as resp:
                if resp.status == 200:
                    self.record(url, await resp.text())
        except (TimeoutError, aiohttp.ClientError):
            return  # the last good sample ages; the detector judges its staleness

    async def run(
        self, urls: Sequence[str], *, interval: float, on_scrape: Callable[[], None]
    ) -> None:
        async with aiohttp.ClientSession() as session:
            while True:
                await asyncio.gather(*(self.scrape(session, u) for u in urls))
                on_scrape()
                await self._clock.sleep(interval)
