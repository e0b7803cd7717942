"""Graceful drain: queued requests get 503 shutting-down, running streams finish or are cut, a
mounted coordinator's held waits are answered 202 at once."""

from __future__ import annotations

import asyncio

import aiohttp
from router_harness import body, coordinator_params, fc_config, queued, running_router, until

from sluiceway.broker.memory import MemoryBroker
from sluiceway.coordinator.server import mount_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.observability.names import COORDINATOR_HELD_CONNECTIONS
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


async def test_drain_with_a_mounted_coordinator_answers_held_waits_at_once() -> None:
    async with running_router(fc_config(), sim=SIM) as rig, aiohttp.ClientSession() as s:
        front = mount_coordinator(
            rig.app,
            coordinator_params(wait_cap_seconds=30),
            broker=MemoryBroker(),  # no processor: the wait is held until its cap
            quota_store=MemoryQuotaStore(),
            clock=rig.clock,
        )
        wait = {"x-llm-d-async-mode": "wait", "x-llm-d-tenant": "premium"}

        async def held() -> tuple[int, dict[str, str]]:
            async with s.post(rig.url + "/v1/completions", json=body(), headers=wait) as r:
                return r.status, await r.json()

        waiting = asyncio.create_task(held())
        registry = front.metrics.registry
        await until(lambda: registry.get_sample_value(COORDINATOR_HELD_CONNECTIONS) == 1)
        loop = asyncio.get_running_loop()
        began = loop.time()
        rig.stop.set()
        status, answer = await asyncio.wait_for(waiting, 5)
        assert status == 202 and answer["status"] == "pending"
        assert loop.time() - began < 3
