"""Sources over real servers: PromQL against a private Prometheus (with the credentials header
sent as configured) and the /metrics scrape of the simulator (vLLM names survive)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp import web

from loopback import serving
from sluiceway.clock import RealClock
from sluiceway.localservices import PrometheusServer
from sluiceway.signals.promql import PromQLSource
from sluiceway.signals.scrape import ScrapeSource
from sluiceway.signals.settings import PromAuth
from sluiceway.sim import SimConfig, running_simulator


@pytest.mark.prometheus
async def test_promql_reads_a_real_prometheus(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    prom = prometheus_factory([])
    good = PromQLSource(prom.url, "vector(0.25)")
    scalar = PromQLSource(prom.url, "scalar(vector(3))")
    empty = PromQLSource(prom.url, "no_such_metric")
    bad = PromQLSource(prom.url, "sum(")
    try:
        assert (await good.read()).value == 0.25
        assert (await scalar.read()).value == 3.0
        nothing = await empty.read()
        assert not nothing.error and nothing.why_blind() == "no sample"
        assert "prometheus" in (await bad.read()).error
    finally:
        for source in (good, scalar, empty, bad):
            await source.aclose()


@pytest.fixture
async def fake_prometheus() -> AsyncIterator[tuple[str, list[str]]]:
    """Answers every query with 0.5 and records the Authorization headers it was sent."""
    seen: list[str] = []

    async def query(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        result = [{"metric": {}, "value": [0, "0.5"]}]
        body = {"status": "success", "data": {"resultType": "vector", "result": result}}
        return web.json_response(body)

    app = web.Application()
    app.router.add_get("/api/v1/query", query)
    async with serving(app) as url:
        yield url, seen


async def test_credentials_are_sent(fake_prometheus: tuple[str, list[str]]) -> None:
    url, seen = fake_prometheus
    bearer = PromQLSource(url, "up", auth=PromAuth(bearer_token="tok"))
    basic = PromQLSource(url, "up", auth=PromAuth(username="u", password="p"))
    try:
        assert (await bearer.read()).value == 0.5
        assert (await basic.read()).value == 0.5
    finally:
        await bearer.aclose()
        await basic.aclose()
    assert seen == ["Bearer tok", "Basic dTpw"]


async def test_scrape_reads_the_simulators_running_requests() -> None:
    async with running_simulator(SimConfig(), clock=RealClock()) as sim:
        source = ScrapeSource(sim.urls[0] + "/metrics", "vllm_num_requests_running")
        missing = ScrapeSource(sim.urls[0] + "/metrics", "vllm:no_such_metric")
        try:
            reading = await source.read()
            assert reading.value == 0.0 and reading.samples[0].name == "vllm:num_requests_running"
            assert (await missing.read()).why_blind() == "no sample"
        finally:
            await source.aclose()
            await missing.aclose()
