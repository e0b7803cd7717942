"""Saturation measured on the model servers: the router scrapes each endpoint's vLLM metrics
(the simulator exports vLLM's names) and fills the gaps between readings with its own counts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from router_harness import (
    body,
    fc_config,
    picker_config,
    queued,
    running_router,
    sample,
    scrape,
    serving_router,
    until,
)

from loopback import serving
from sluiceway.clock import RealClock
from sluiceway.observability import names
from sluiceway.router.build import build_router
from sluiceway.router.gateway import Gateway
from sluiceway.router.load_scraper import measure_pool
from sluiceway.router.settings import RouterSettings
from sluiceway.sim import SimConfig, SimPool, running_simulator

# The multi-tenant guide's detector: concurrency-detector, maxConcurrency 10, requests mode.
CONCURRENCY = fc_config(max_concurrency=10)
# The same plugin declared, but flowControl.saturationDetector not naming it: the default
# utilization-detector (queueDepthThreshold 5, staleness 200 ms) gates dispatch instead.
UTILIZATION = """
apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: concurrency-detector
  parameters: {maxConcurrency: 10, concurrencyMode: requests}
"""
TEN_SLOTS = SimConfig(max_num_seqs=10, time_to_first_token=0.02, inter_token_latency=0.01)
REQUEST_SECONDS = 1.0  # 100 tokens, 10 ms apart


async def _ttft(session: aiohttp.ClientSession, url: str, tokens: int) -> float:
    """Seconds to the first streamed bytes (the queue wait plus the server's TTFT)."""
    started = time.perf_counter()
    async with session.post(url + "/v1/completions", json=body(tokens, stream=True)) as resp:
        assert resp.status == 200
        await resp.content.readany()
        first = time.perf_counter() - started
        await resp.read()
    return first


@pytest.mark.parametrize(
    ("config", "interval", "peak"),
    [(CONCURRENCY, 0.1, 10), (UTILIZATION, 0.1, 10), (UTILIZATION, 0.0, 5)],
    ids=["concurrency", "utilization", "utilization-own-counts"],
)
async def test_a_ten_slot_server_runs_ten_at_once(config: str, interval: float, peak: int) -> None:
    settings = {"metrics_scrape_interval": interval}
    async with (
        running_router(config, sim=TEN_SLOTS, settings=settings) as rig,
        aiohttp.ClientSession() as s,
    ):
        waits = await asyncio.gather(*(_ttft(s, rig.url, 100) for _ in range(10)))
        engine = rig.sim.engines[0]
        assert engine.peak_running == peak
        if peak == 10:  # requests 6-10 did not wait for the first five to finish
            assert max(waits) < REQUEST_SECONDS / 2, waits
        else:  # the router's own in-flight count read as the queue: five at a time
            assert sorted(waits)[5] > REQUEST_SECONDS * 0.8, waits


def _requests_at(gateway: Gateway, url: str) -> int | None:
    snaps = {e.name: e for e in gateway.pool.snapshots(gateway.clock.now())}
    return snaps[url].inflight_requests if url in snaps else None


async def test_requests_the_router_did_not_send_hold_its_dispatch_back() -> None:
    async with (
        running_router(CONCURRENCY, sim=TEN_SLOTS) as rig,
        aiohttp.ClientSession() as s,
    ):
        url = rig.sim.urls[0]
        direct = [asyncio.create_task(_ttft(s, url, 300)) for _ in range(6)]
        await until(lambda: _requests_at(rig.gateway, url) == 6, what="six seen on the server")
        routed = [asyncio.create_task(_ttft(s, rig.url, 300)) for _ in range(6)]
        await until(lambda: queued(rig) == 2, what="two held back")
        engine = rig.sim.engines[0]
        await until(lambda: engine.num_running == 10, what="the server full")
        await asyncio.sleep(0.3)  # three more readings: nothing more is sent
        assert rig.gateway.pool.members[url].inflight == 4 and queued(rig) == 2
        assert (engine.num_running, engine.num_waiting) == (10, 0)
        for task in [*direct, *routed]:
            task.cancel()
        await asyncio.gather(*direct, *routed, return_exceptions=True)


class MetricsFront:
    """A model server in front of a simulator whose ``/metrics`` can fail or hang; every other
    request is relayed whole."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.fault: str | None = None  # None, "error" or "hang"
        self.healed = asyncio.Event()
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self._relay)

    def heal(self) -> None:
        self.fault = None
        self.healed.set()

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/metrics" and self.fault == "error":
            return web.Response(status=500)
        if request.path == "/metrics" and self.fault == "hang":
            await self.healed.wait()
        async with (
            aiohttp.ClientSession() as s,
            s.request(
                request.method, self.target + request.path_qs, data=await request.read()
            ) as resp,
        ):
            data = await resp.read()
            return web.Response(status=resp.status, body=data, content_type=resp.content_type)


@contextlib.asynccontextmanager
async def fronted_router(
    config: str, sim: SimConfig, interval: float
) -> AsyncIterator[tuple[str, str, MetricsFront, Gateway, SimPool]]:
    """A router whose one endpoint is a :class:`MetricsFront` over a simulator: the router's
    URL, the endpoint's, the front, the gateway and the simulator."""
    clock = RealClock()
    async with running_simulator(sim, clock=clock) as pool:
        front = MetricsFront(pool.urls[0])
        async with serving(front.app) as endpoint:
            settings = RouterSettings(endpoints=(endpoint,), metrics_scrape_interval=interval)
            app, _ = build_router(picker_config(config), settings, clock)
            async with serving_router(app) as url:
                yield url, endpoint, front, app.gateway, pool
            front.heal()


def _ages(gateway: Gateway) -> dict[str, float]:
    """``sluiceway_router_endpoint_reading_age_seconds`` by endpoint, as Prometheus reads it."""
    return {
        s.labels["endpoint"]: s.value
        for family in gateway.metrics.registry.collect()
        for s in family.samples
        if s.name == names.ROUTER_ENDPOINT_READING_AGE_SECONDS
    }


@pytest.mark.parametrize("fault", ["error", "hang"])
@pytest.mark.parametrize(
    ("config", "slots", "others"),
    [(CONCURRENCY, 10, 10), (UTILIZATION, 2, 7)],
    ids=["concurrency", "utilization"],
)
async def test_a_stale_reading_never_holds_dispatch(
    config: str, slots: int, others: int, fault: str
) -> None:
    """Another client's requests fill the server (concurrency: ten running; utilization: five
    waiting), so a request through the router queues. Then the server's /metrics fails or
    hangs: within about one interval the router dispatches on its own count, instead of
    waiting on the last reading for ever."""
    interval = 0.1
    sim = SimConfig(max_num_seqs=slots, time_to_first_token=0.02, inter_token_latency=0.01)
    async with (
        fronted_router(config, sim, interval) as (url, endpoint, front, gateway, pool),
        aiohttp.ClientSession() as s,
    ):
        direct = [asyncio.create_task(_ttft(s, pool.urls[0], 900)) for _ in range(others)]
        await until(lambda: _requests_at(gateway, endpoint) == others, what="others measured")
        mine = asyncio.create_task(_ttft(s, url, 1))
        controller = gateway.controller
        assert controller is not None
        await until(lambda: controller.totals.queued == 1, what="held back by the reading")
        await asyncio.sleep(3 * interval)
        assert controller.totals.queued == 1  # fresh readings keep holding it
        front.fault = fault
        broken = time.perf_counter()
        await until(lambda: controller.totals.queued == 0, what="dispatched on own counts")
        stall = time.perf_counter() - broken
        # A failing page drops the reading at the next round; a hanging one when the round's
        # timeout (one interval) ends, or the reading is two intervals old.
        assert stall < (1 if fault == "error" else 2) * interval + 0.2, stall
        assert gateway.pool.healthy[0].inflight == 1
        page = await scrape(url)
        failures = names.ROUTER_ENDPOINT_SCRAPE_FAILURES_TOTAL
        assert sample(page, failures, endpoint=endpoint) >= 1
        assert sample(page, names.ROUTER_ENDPOINT_READING_AGE_SECONDS, endpoint=endpoint) == (
            float("inf")
        )
        front.heal()
        await until(lambda: _ages(gateway)[endpoint] < 1.0, what="read again")
        for task in [*direct, mine]:
            task.cancel()
        await asyncio.gather(*direct, mine, return_exceptions=True)


async def test_endpoints_that_join_at_run_time_are_scraped_and_leavers_forgotten() -> None:
    async with (
        running_router(CONCURRENCY, sim=TEN_SLOTS, instances=2) as rig,
        aiohttp.ClientSession() as s,
    ):
        first, joining = rig.sim.urls
        await rig.gateway.set_endpoints([first])
        assert joining not in rig.gateway.pool.members
        await rig.gateway.set_endpoints([first, joining])
        direct = [asyncio.create_task(_ttft(s, joining, 300)) for _ in range(3)]
        await until(lambda: _requests_at(rig.gateway, joining) == 3, what="the newcomer read")
        for task in direct:
            task.cancel()
        await asyncio.gather(*direct, return_exceptions=True)
        await rig.gateway.set_endpoints([first])
        await until(lambda: set(_ages(rig.gateway)) == {first}, what="the leaver forgotten")
        assert _ages(rig.gateway)[first] < 1.0


class NotVllm:
    """A model server whose /metrics is not vLLM's (or missing); completions wait for a gate."""

    def __init__(self, metrics_status: int) -> None:
        self.gate = asyncio.Event()
        self.app = web.Application()
        self.app.router.add_get("/health", self._health)
        self.app.router.add_get("/metrics", self._metrics)
        self.app.router.add_post("/v1/completions", self._complete)
        self._status = metrics_status

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(status=self._status, text="process_cpu_seconds_total 1.5\n")

    async def _complete(self, _: web.Request) -> web.Response:
        await self.gate.wait()
        return web.json_response({"choices": [{"text": "ok"}], "usage": None})


@pytest.mark.parametrize(
    ("status", "said"),
    [(200, "has no vLLM series"), (404, "cannot be read (HTTP 404)")],
    ids=["not-vllm", "unreadable"],
)
async def test_a_server_without_vllm_metrics_is_read_on_the_routers_count(
    status: int, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sluiceway.router.load_scraper")
    fake = NotVllm(status)
    async with serving(fake.app) as endpoint:
        settings = RouterSettings(endpoints=(endpoint,), metrics_scrape_interval=0.02)
        app, _ = build_router(picker_config(CONCURRENCY), settings, RealClock())
        async with serving_router(app) as url, aiohttp.ClientSession() as s:
            sent = [asyncio.create_task(_post(s, url)) for _ in range(2)]
            await until(lambda: _requests_at(app.gateway, endpoint) == 2, what="own count")
            await asyncio.sleep(0.2)  # ten rounds
            fake.gate.set()
            assert await asyncio.gather(*sent) == [200, 200]
    scraper = "sluiceway.router.load_scraper"
    lines = [r.getMessage() for r in caplog.records if r.name == scraper]
    assert len(lines) == 1 and said in lines[0], lines


async def _post(session: aiohttp.ClientSession, url: str) -> int:
    async with session.post(url + "/v1/completions", json=body(1)) as resp:
        await resp.read()
        return resp.status


def test_no_scraping_at_zero_and_a_warning_for_an_interval_past_the_staleness(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def gateway(config: str, interval: float) -> Gateway:
        settings = RouterSettings(
            endpoints=("http://127.0.0.1:9",), metrics_scrape_interval=interval
        )
        return build_router(picker_config(config), settings, RealClock())[0].gateway

    assert measure_pool(gateway(UTILIZATION, 0.0)) is None
    assert measure_pool(gateway(CONCURRENCY, 1.0)) is not None
    scraper_log = "sluiceway.router.load_scraper"
    assert not [r for r in caplog.records if r.name == scraper_log]  # no staleness to judge
    scraper = measure_pool(gateway(UTILIZATION, 1.0))
    assert scraper is not None and scraper.interval == 1.0
    [warning] = [r for r in caplog.records if r.name == scraper_log]
    assert warning.levelno == logging.WARNING
    assert "not below the detector's 0.2s staleness threshold" in warning.getMessage()
