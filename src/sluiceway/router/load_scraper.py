"""The scrape loop behind measured endpoint load (I/O; what a reading means, and how long it
counts, is :mod:`sluiceway.router.measured_load`).

Every ``interval`` scaled seconds a round GETs ``/metrics`` of each endpoint in the pool at that
moment (discovery adds and removes endpoints while the router runs), each with a timeout of one
interval, so a slow page never holds the next round back by more than that. A page is recorded
the moment it arrives, with the router's in-flight count to that endpoint then. After the round
the router runs a dispatch cycle (capacity may have changed). Each change of what an endpoint's
page gives (readings, no vLLM series, nothing) is logged once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import aiohttp

from sluiceway.clock import Clock
from sluiceway.router.measured_load import MeasuredLoad, Status, read_vllm, reading_lifetime
from sluiceway.router.pool import EndpointPool

if TYPE_CHECKING:
    from sluiceway.router.gateway import Gateway

__all__ = ["LoadScraper", "measure_pool"]

log = logging.getLogger(__name__)

_NOTICES = {
    Status.MEASURED: (logging.INFO, "endpoint {url}: load read from its vLLM metrics"),
    Status.NOT_VLLM: (
        logging.INFO,
        "endpoint {url}: /metrics has no vLLM series; its load is the router's own count",
    ),
    Status.UNREADABLE: (
        logging.WARNING,
        "endpoint {url}: /metrics cannot be read ({detail}); its load is the router's own "
        "count until it can",
    ),
}


class LoadScraper:
    """Scrapes the pool's endpoints into ``measured``; ``on_round`` after each round."""

    def __init__(
        self,
        pool: EndpointPool,
        measured: MeasuredLoad,
        clock: Clock,
        *,
        interval: float,
        on_round: Callable[[], None],
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be > 0")
        self.interval = interval
        self._pool = pool
        self._measured = measured
        self._clock = clock
        self._on_round = on_round
        self._timeout = aiohttp.ClientTimeout(total=clock.to_wall(interval))

    async def run(self) -> None:
        """A round every ``interval``, until cancelled."""
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            while True:
                due = self._clock.monotonic() + self.interval
                try:
                    await self.round(session)
                except Exception:  # a bug here must not end the scraping for good
                    log.exception("a metrics scrape round failed")
                await self._clock.sleep(due - self._clock.monotonic())

    async def round(self, session: aiohttp.ClientSession) -> None:
        """Scrape every endpoint in the pool now, then ``on_round``."""
        urls = list(self._pool.members)
        self._measured.keep_only(urls)
        await asyncio.gather(*(self._scrape(session, url) for url in urls))
        self._on_round()

    async def _scrape(self, session: aiohttp.ClientSession, url: str) -> None:
        try:
            async with session.get(f"{url}/metrics", timeout=self._timeout) as resp:
                if resp.status != 200:
                    self._notice(url, self._measured.failed(url), f"HTTP {resp.status}")
                    return
                page = await resp.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self._notice(url, self._measured.failed(url), str(exc) or type(exc).__name__)
            return
        member = self._pool.members.get(url)
        inflight = 0 if member is None else member.inflight
        reading = read_vllm(page.decode("utf-8", errors="replace"))  # the text format is UTF-8
        status = self._measured.landed(url, reading, inflight, self._clock.now())
        self._notice(url, status, "")

    @staticmethod
    def _notice(url: str, status: Status | None, detail: str) -> None:
        if status is not None:
            level, message = _NOTICES[status]
            log.log(level, message.format(url=url, detail=detail))


def measure_pool(gateway: Gateway) -> LoadScraper | None:
    """Measured load for ``gateway``'s pool while its settings ask for scrapes (None: they do
    not): installs the load source and the per-endpoint metrics; run the scraper's ``run``."""
    interval = gateway.settings.metrics_scrape_interval
    if interval <= 0:
        return None
    detector = gateway.flow.detector
    lifetime = reading_lifetime(interval, detector)
    if interval >= lifetime:
        log.warning(
            "a %gs metrics scrape interval is not below the detector's %gs staleness "
            "threshold: each reading counts %gs, the router's own counts the rest",
            interval,
            lifetime,
            lifetime,
        )
    measured = MeasuredLoad(lifetime)
    gateway.pool.set_load_source(measured)
    clock = gateway.clock
    gateway.metrics.watch_readings(lambda: measured.report(clock.now()))
    return LoadScraper(gateway.pool, measured, clock, interval=interval, on_round=gateway.kick)
