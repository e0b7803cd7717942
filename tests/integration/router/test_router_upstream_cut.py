"""A model server that dies under the router: a cut stream ends with an error event (the openai
client raises, it does not see a truncated success), a non-streamed request with no other
endpoint to retry on gets 502, both are counted, and no client-facing message names the
server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import openai
import pytest
from router_harness import (
    body,
    picker_config,
    running_router,
    sample,
    scrape,
    serving_router,
    sim_process,
    until,
)

from sluiceway.clock import RealClock
from sluiceway.router.app import RouterApp
from sluiceway.router.build import build_router
from sluiceway.router.settings import RouterSettings
from sluiceway.sim import SimConfig

PLAIN = "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"
FAILURES = "sluiceway_router_upstream_failures_total"
RETRIES = "sluiceway_router_upstream_retries_total"


@contextlib.asynccontextmanager
async def router_over(sim_url: str) -> AsyncIterator[tuple[str, RouterApp]]:
    """The router in front of ``sim_url``, checking health too rarely to notice a death."""
    settings = RouterSettings(endpoints=(sim_url,), health_interval=60)
    app, _ = build_router(picker_config(PLAIN), settings, RealClock())
    async with serving_router(app) as url:
        yield url, app


def _failures(phase: str, count: int) -> str:
    return f'{FAILURES}{{inference_pool="sluiceway",phase="{phase}"}} {count:.1f}'


async def test_a_stream_whose_model_server_is_killed_ends_with_an_error(tmp_path: Path) -> None:
    async with sim_process(tmp_path) as (sim_url, proc), router_over(sim_url) as (url, _):
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="-", max_retries=0) as client:
            stream = await client.completions.create(
                model="sim-model", prompt="hi", max_tokens=500, stream=True
            )
            chunks = 0
            with pytest.raises(openai.APIError) as err:
                async for _ in stream:
                    chunks += 1
                    if chunks == 3:
                        proc.send_signal(signal.SIGKILL)
        assert chunks >= 3
        port = sim_url.rsplit(":", 1)[1]
        assert "ended the stream before it was complete" in err.value.message
        assert port not in err.value.message and port not in str(err.value.body)
        metrics = await scrape(url)
        assert _failures("mid_stream", 1) in metrics
        assert _failures("before_response", 0) in metrics


async def test_a_request_whose_model_server_dies_is_502_naming_no_server(tmp_path: Path) -> None:
    async with (
        sim_process(tmp_path) as (sim_url, proc),
        router_over(sim_url) as (url, app),
        aiohttp.ClientSession() as s,
    ):
        port = sim_url.rsplit(":", 1)[1]
        payload = body(500)
        waiting = asyncio.create_task(s.post(url + "/v1/completions", json=payload))
        await until(lambda: app.gateway.pool.healthy[0].inflight == 1, what="dispatch")
        await asyncio.sleep(0.2)  # generating
        proc.send_signal(signal.SIGKILL)
        async with await waiting as r:
            assert r.status == 502
            text = await r.text()
        assert json.loads(text)["error"]["code"] == 502 and port not in text
        # its retries on the only endpoint found it refusing connections: it left the pool
        assert app.gateway.pool.healthy == []
        async with s.get(url + "/readyz") as r:
            assert r.status == 503
        metrics = await scrape(url)
        assert _failures("before_response", 1) in metrics
        assert sample(metrics, RETRIES) >= 1


async def test_a_stream_the_model_server_ends_early_is_not_passed_off_as_complete() -> None:
    sim = SimConfig(time_to_first_token=0.005, inter_token_latency=0.02)
    async with running_router(PLAIN, sim=sim) as rig, aiohttp.ClientSession() as s:
        async with s.post(rig.url + "/v1/completions", json=body(500, stream=True)) as r:
            assert r.status == 200
            await r.content.readuntil(b"\n\n")
            # the simulator shutting down aborts its requests and closes their streams cleanly,
            # without [DONE]
            await rig.sim.instances[0].driver.stop()
            data = await r.read()
        assert b"[DONE]" not in data
        last = data.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
        assert json.loads(last.removeprefix(b"data: "))["error"]["code"] == 502
        assert _failures("mid_stream", 1) in await scrape(rig.url)
