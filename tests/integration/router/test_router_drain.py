"""Graceful drain: queued requests get 503 shutting-down, running streams finish or are cut."""

from __future__ import annotations

import asyncio

import aiohttp
from router_harness import body, fc_config, queued, running_router, until

from sluiceway.sim import SimConfig

SIM = SimConfig(time_to_first_token=0.005, inter_token_latency=0.01, max_num_seqs=4)
REASON = "x-llm-d-request-dropped-reason"


async def _stream(s: aiohttp.ClientSession, url: str, max_tokens: int) -> tuple[int, bytes]:
    async with s.post(url + "/v1/completions", json=body(max_tokens, stream=True)) as r:
        return r.status, await r.read()


async def _plain(s: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with s.post(url + "/v1/completions", json=body()) as r:
        await r.read()
        return r.status, r.headers.get(REASON, "")


async def test_drain_answers_queued_and_lets_running_streams_finish() -> None:
    cfg = fc_config(max_concurrency=1)
    async with running_router(cfg, sim=SIM) as rig, aiohttp.ClientSession() as s:
        running = asyncio.create_task(_stream(s, rig.url, 40))
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
        waiting = asyncio.create_task(_plain(s, rig.url))
        await until(lambda: queued(rig) == 1)
        rig.stop.set()
        assert await waiting == (503, "rejected-shutting-down")
        assert await _plain(s, rig.url) == (503, "rejected-shutting-down")
        async with s.get(rig.url + "/readyz") as r:
            assert r.status == 503
        status, data = await running
        assert status == 200 and data.endswith(b"data: [DONE]\n\n")


async def test_drain_timeout_cuts_streams_that_run_too_long() -> None:
    cfg = fc_config(max_concurrency=1)
    settings = {"drain_timeout": 0.05}
    async with running_router(cfg, sim=SIM, settings=settings) as rig, aiohttp.ClientSession() as s:
        running = asyncio.create_task(_stream(s, rig.url, 900))
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
        rig.stop.set()
        try:
            status, data = await running
        except aiohttp.ClientPayloadError:
            return
        assert status == 200 and b"[DONE]" not in data
