"""Endpoint load: the router's own counts, or the last scrape of an endpoint's /metrics."""

from __future__ import annotations

import asyncio

from sluiceway.clock import VirtualClock
from sluiceway.router.load import EndpointLoad, InFlightLoad, ScrapedLoad

PAGE = """# HELP vllm:num_requests_waiting Waiting.
vllm:num_requests_waiting{model_name="m",engine="0"} 3.0
vllm_kv_cache_usage_perc{model_name="m",engine="0"} 0.25
"""


def test_in_flight_is_the_routers_own_view() -> None:
    assert InFlightLoad().load("u", 4, 10.0) == EndpointLoad(4, 0.0, 10.0)


def test_a_scrape_gives_waiting_and_kv_with_its_time_and_then_ages() -> None:
    clock = VirtualClock(start=100.0)
    load = ScrapedLoad(clock)
    assert load.load("u", 2, 100.0) == EndpointLoad(2, 0.0, 100.0)  # never scraped
    load.record("u", PAGE)
    clock.advance(5)
    assert load.load("u", 9, clock.now()) == EndpointLoad(3, 0.25, 100.0)
    load.record("u", "# nothing here\n")
    assert load.load("u", 9, clock.now()) == EndpointLoad(None, None, 105.0)


async def test_an_unreachable_endpoint_keeps_its_last_sample() -> None:
    import aiohttp

    load = ScrapedLoad(VirtualClock(start=1.0), timeout=0.5)
    load.record("http://127.0.0.1:1", PAGE)
    async with aiohttp.ClientSession() as session:
        await asyncio.wait_for(load.scrape(session, "http://127.0.0.1:1"), 5)
    assert load.load("http://127.0.0.1:1", 0, 50.0) == EndpointLoad(3, 0.25, 1.0)
