"""What the run watches besides the clients: the model servers' running and waiting requests,
the router's request counts by band, every model attempt (for wasted tokens and abandoned
requests), and the event loop's lag.

Upstream samples every 5 s from a pod; in one process we sample every quarter second (scaled)
and observe every attempt's start and end directly on the simulator.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry, Metric
from prometheus_client.parser import text_string_to_metric_families

from sluiceway.bench.isolation.checks import BandSample, PoolSample
from sluiceway.bench.isolation.records import percentile
from sluiceway.bench.isolation.waste import ModelAttempt
from sluiceway.clock import Clock
from sluiceway.sim import Engine

__all__ = [
    "AttemptLog",
    "LoopLag",
    "PoolWatch",
    "band_counts",
    "histogram_median",
    "metric_total",
    "registry_of",
    "request_time_buckets",
    "scrape_metrics",
    "scrape_request_time",
]

REQUEST_ID = "x-request-id"
_REQUESTS_TOTAL = "llm_d_epp_flow_control_requests_total"
REQUEST_TIME = "vllm:request_inference_time_seconds"
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
SCRAPE_TIMEOUT = 2.0  # seconds a model server or router gets to answer a scrape


def band_counts(registry: CollectorRegistry) -> dict[int, float]:
    """The router's cumulative requests by priority (every outcome), as upstream scrapes."""
    out: dict[int, float] = {}
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name != _REQUESTS_TOTAL:
                continue
            with contextlib.suppress(KeyError, ValueError):
                prio = int(sample.labels["priority"])
                out[prio] = out.get(prio, 0.0) + sample.value
    return out


@dataclass
class AttemptLog:
    """Every attempt's start, prompt, cache hits and generated tokens, by request id (the
    ``x-request-id`` the simulator records), read off the engines as attempts start and end."""

    clock: Clock
    engines: Sequence[Engine]
    attempts: list[ModelAttempt] = field(default_factory=list)
    _live: dict[int, dict[str, tuple[Any, ModelAttempt]]] = field(default_factory=dict)

    def watch(self) -> Callable[[], None]:
        stops = [e.labels.subscribe(self._changed(e)) for e in self.engines]

        def unsubscribe() -> None:
            for stop in stops:
                stop()

        return unsubscribe

    def _changed(self, engine: Engine) -> Callable[[int, tuple[tuple[str, str], ...]], None]:
        live = self._live.setdefault(id(engine), {})

        def on_change(delta: int, labels: tuple[tuple[str, str], ...]) -> None:
            if delta > 0:
                self._started(engine, live)
            else:
                self._ended(engine, live)

        return on_change

    def _started(self, engine: Engine, live: dict[str, tuple[Any, ModelAttempt]]) -> None:
        for sim_id in engine.running_ids():
            seq = engine.sequence(sim_id)
            if seq is None or sim_id in live:
                continue
            rid = dict(seq.request.labels).get(REQUEST_ID, "").rpartition(":")[2]
            attempt = ModelAttempt(
                rid,
                # submitted to the model server (it may wait there for a slot)
                self._client_time(seq.arrival),
                len(seq.request.prompt),
                seq.cached_tokens,
                seq.request.max_tokens,
                scheduled=self._maybe(seq.scheduled_at),
            )
            self.attempts.append(attempt)
            live[sim_id] = (seq, attempt)

    def _ended(self, engine: Engine, live: dict[str, tuple[Any, ModelAttempt]]) -> None:
        running = set(engine.running_ids())
        for sim_id in [s for s in live if s not in running]:
            seq, attempt = live.pop(sim_id)
            attempt.generated = len(seq.output)
            attempt.last_token = self._maybe(seq.last_token_at)
            attempt.ended = self.clock.now()
            # the engine leaves the running set before it records why and when the request
            # finished: read those once its step is over
            asyncio.get_running_loop().call_soon(self._closed, seq, attempt)

    def _closed(self, seq: Any, attempt: ModelAttempt) -> None:
        attempt.finish_reason = seq.finish_reason
        attempt.ended = self._maybe(seq.finished_at) or attempt.ended

    def _client_time(self, at: float) -> float:
        """The engine stamps with the clock's monotonic time, the clients with its wall time."""
        return self.clock.now() - (self.clock.monotonic() - at)

    def _maybe(self, at: float | None) -> float | None:
        return None if at is None else self._client_time(at)

    def since(self, at: float) -> list[ModelAttempt]:
        return [a for a in self.attempts if a.started >= at]


@dataclass
class LoopLag:
    """How late a 10 ms timer fires, in wall milliseconds."""

    interval: float = 0.01
    lags: list[float] = field(default_factory=list)

    async def run(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(self.interval)
            self.lags.append(max(0.0, (time.perf_counter() - before - self.interval) * 1000))

    def mark(self) -> int:
        return len(self.lags)

    def p99(self, since: int = 0) -> float | None:
        values = self.lags[since:]
        return percentile(values, 0.99) if values else None


@dataclass
class PoolWatch:
    """Samples the pool every ``interval`` scaled seconds."""

    clock: Clock
    engines: Sequence[Engine]
    endpoints: Sequence[str]
    registry: CollectorRegistry
    realtime_in_flight: Callable[[], int]
    interval: float = 0.25
    pool: list[PoolSample] = field(default_factory=list)
    bands: list[BandSample] = field(default_factory=list)
    routers: Sequence[str] = ()  # router processes: their band counts are scraped and summed

    async def run(self) -> None:
        async with aiohttp.ClientSession() as http:
            while True:
                running, waiting = await self._pool_now(http)
                now = self.clock.now()
                self.pool.append(PoolSample(now, running, waiting, self.realtime_in_flight()))
                self.bands.append(BandSample(now, await self._bands_now(http)))
                await asyncio.sleep(self.clock.to_wall(self.interval))

    async def _bands_now(self, http: aiohttp.ClientSession) -> dict[int, float]:
        if not self.routers:
            return band_counts(self.registry)
        out: dict[int, float] = {}
        for url in self.routers:
            registry = await scrape_metrics(http, url, only=_REQUESTS_TOTAL)
            for prio, count in ({} if registry is None else band_counts(registry)).items():
                out[prio] = out.get(prio, 0.0) + count
        return out

    async def _pool_now(self, http: aiohttp.ClientSession) -> tuple[int, int]:
        if self.engines:
            return (
                sum(e.num_running for e in self.engines),
                sum(e.num_waiting for e in self.engines),
            )
        running = waiting = 0.0
        for url in self.endpoints:
            registry = await scrape_metrics(http, url)
            if registry is not None:
                running += metric_total(registry, RUNNING)
                waiting += metric_total(registry, WAITING)
        return round(running), round(waiting)


class _Parsed:
    """Exposition text as a collector, so a registry reads it as the in-process router's."""

    def __init__(self, text: str) -> None:
        self._families = list(text_string_to_metric_families(text))

    def collect(self) -> Iterable[Metric]:
        return self._families


def registry_of(text: str) -> CollectorRegistry:
    """A registry holding what ``text`` (Prometheus text format) exposes; malformed text is a
    :class:`ValueError`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Parsed(text))
    return registry


async def scrape_metrics(
    http: aiohttp.ClientSession, url: str, only: str = ""
) -> CollectorRegistry | None:
    """What ``url`` exposes at ``/metrics``; None when it does not answer with parsable text.
    ``only``: parse just the lines naming that metric (a router's page is large, and parsing
    it all on the bench's loop every sample made the loop late)."""
    with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
        timeout = aiohttp.ClientTimeout(total=SCRAPE_TIMEOUT)
        async with http.get(url.rstrip("/") + "/metrics", timeout=timeout) as resp:
            if resp.status == 200:
                text = await resp.text()
                if only:
                    text = "".join(line for line in text.splitlines(True) if only in line)
                return registry_of(text)
    return None


def _samples(registry: CollectorRegistry, name: str) -> Iterator[tuple[Mapping[str, str], float]]:
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == name:
                yield sample.labels, sample.value


def metric_total(registry: CollectorRegistry, name: str) -> float:
    """The sum of every series of ``name`` (e.g. running requests over a server's engines)."""
    return sum(value for _, value in _samples(registry, name))


def request_time_buckets(registry: CollectorRegistry) -> Iterator[tuple[str, float]]:
    """``(le, cumulative count)`` of ``vllm:request_inference_time_seconds``, ``le`` as
    exposed (``"+Inf"``)."""
    for labels, value in _samples(registry, REQUEST_TIME + "_bucket"):
        if "le" in labels:
            yield labels["le"], value


async def scrape_request_time(
    http: aiohttp.ClientSession, endpoints: Sequence[str]
) -> dict[float, float]:
    """The model servers' cumulative request-time buckets (upper bound -> count), summed over
    servers; a server that does not answer adds nothing."""
    buckets: dict[float, float] = {}
    for url in endpoints:
        registry = await scrape_metrics(http, url)
        for le, count in () if registry is None else request_time_buckets(registry):
            buckets[float(le)] = buckets.get(float(le), 0.0) + count
    return buckets


def histogram_median(before: dict[float, float], after: dict[float, float]) -> float | None:
    """The median of what a cumulative histogram counted between two scrapes, interpolated
    linearly inside its bucket (as PromQL's ``histogram_quantile``); None when nothing was."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    if not counts or counts[-1] <= 0:
        return None
    half, low, below = counts[-1] / 2, 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=True):
        if count >= half:
            if bound == float("inf"):
                return low
            return low + (bound - low) * (half - below) / max(count - below, 1e-12)
        low, below = bound, count
    return None
