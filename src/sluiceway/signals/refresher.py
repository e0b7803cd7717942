"""One refresher per distinct source, shared by every gate that reads it.

A :class:`Refresher` reads its source once per period (scaled seconds) while at least one
subscriber depends on it, keeps the latest reading, and calls every subscriber when the value
or its availability changes. Gates read :meth:`Refresher.latest`; a message never causes a
query of its own, so sixteen gates over one query cost one query per period.

The :class:`SignalHub` of a process builds the sources (with one shared HTTP session and the
process's Prometheus settings) and hands out the refresher for each distinct source key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace

from sluiceway.clock import Clock
from sluiceway.signals.base import MetricSource, Reading
from sluiceway.signals.promql import PromQLSource
from sluiceway.signals.scrape import ScrapeSource
from sluiceway.signals.session import SharedSession
from sluiceway.signals.settings import DEFAULT_PERIOD, PrometheusSettings

__all__ = ["Refresher", "SignalHub"]

log = logging.getLogger(__name__)

Listener = Callable[[], None]


def _same(a: Reading | None, b: Reading) -> bool:
    return a is not None and a.value == b.value and a.available == b.available


class Refresher:
    """Reads ``source`` every ``period`` scaled seconds while it has subscribers."""

    def __init__(self, source: MetricSource, *, period: float, clock: Clock) -> None:
        self.source = source
        self.period = period if period > 0 else DEFAULT_PERIOD
        self._clock = clock
        self._listeners: list[Listener] = []
        self._latest: Reading | None = None
        self._first = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.reads = 0  # how many times the source was read

    @property
    def subscribers(self) -> int:
        return len(self._listeners)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` on every change; returns the function that unsubscribes."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)
            if not self._listeners and self._task is not None:
                self._task.cancel()
                self._task = None

        return unsubscribe

    async def latest(self) -> Reading:
        """The last reading; the first call (per start) waits for the first read."""
        if self._task is None and self._listeners:
            self._task = asyncio.get_running_loop().create_task(self._run())
        if self._latest is None:
            await self._first.wait()
        assert self._latest is not None
        return self._latest

    def peek(self) -> Reading | None:
        """The last reading without waiting (None before the first read)."""
        return self._latest

    async def refresh(self) -> Reading:
        """Read the source now and tell subscribers if the signal changed."""
        reading = replace(await self.source.read(), at=self._clock.now())
        self.reads += 1
        changed = not _same(self._latest, reading)
        self._latest = reading
        self._first.set()
        if changed:
            for listener in list(self._listeners):
                listener()
        return reading

    async def _run(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception:  # a bug in a source must not end the refresher
                log.exception("signal refresh failed: %s", self.source.key)
            await self._clock.sleep(self.period)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.source.aclose()


class SignalHub:
    """The sources and refreshers of one process."""

    def __init__(self, clock: Clock, prometheus: PrometheusSettings | None = None) -> None:
        self.clock = clock
        self.prometheus = prometheus or PrometheusSettings()
        self._session = SharedSession()
        self._refreshers: dict[str, Refresher] = {}

    @property
    def refreshers(self) -> Mapping[str, Refresher]:
        return self._refreshers

    def promql(self, query: str) -> PromQLSource:
        """A query against the configured Prometheus (the caller checked that one is set)."""
        settings = self.prometheus
        return PromQLSource(
            settings.url,
            query,
            auth=settings.auth,
            timeout=settings.timeout,
            session=self._session,
        )

    def scrape(
        self, url: str, metric: str, labels: Mapping[str, str] | None = None
    ) -> ScrapeSource:
        return ScrapeSource(url, metric, labels, session=self._session)

    def refresher(self, source: MetricSource, *, period: float | None = None) -> Refresher:
        """The one refresher of ``source``'s key (made on first request)."""
        found = self._refreshers.get(source.key)
        if found is None:
            ttl = self.prometheus.cache_ttl if period is None else period
            found = self._refreshers[source.key] = Refresher(source, period=ttl, clock=self.clock)
        return found

    async def aclose(self) -> None:
        for refresher in self._refreshers.values():
            await refresher.aclose()
        self._refreshers.clear()
        await self._session.aclose()
