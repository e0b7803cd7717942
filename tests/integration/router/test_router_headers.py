"""What every answer of the router tells its client, over HTTP: the request id (the same one
the model server got), how long the request queued, and when a drop is worth trying again."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp import web
from router_harness import (
    body,
    fc_config,
    picker_config,
    queued,
    running_router,
    serving_router,
    until,
)

from sluiceway.clock import RealClock
from sluiceway.router.build import build_router
from sluiceway.router.settings import RouterSettings
from sluiceway.sim import SimConfig

REQUEST_ID = "x-request-id"
QUEUED_MS = "x-llm-d-flow-queue-duration-ms"
REASON = "x-llm-d-request-dropped-reason"
SIM = SimConfig(time_to_first_token=0.005, inter_token_latency=0.01, max_num_seqs=4)


class RecordingServer:
    """A model server that records the ``x-request-id`` of each request and answers with an
    id of its own, as a server minting its own ids would."""

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.app = web.Application()
        self.app.router.add_get("/health", self._health)
        self.app.router.add_post("/v1/completions", self._complete)

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response()

    async def _complete(self, request: web.Request) -> web.Response:
        self.ids.append(request.headers.get(REQUEST_ID))
        answer = {"choices": [{"text": "x"}], "usage": {"prompt_tokens": 1}}
        return web.json_response(answer, headers={REQUEST_ID: "the-servers-own"})


@contextlib.asynccontextmanager
async def recording_router() -> AsyncIterator[tuple[str, RecordingServer]]:
    server = RecordingServer()
    runner = web.AppRunner(server.app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        settings = RouterSettings(endpoints=(f"http://127.0.0.1:{port}",))
        app, _ = build_router(picker_config(fc_config()), settings, RealClock())
        async with serving_router(app) as url:
            yield url, server
    finally:
        await runner.cleanup()


async def _post(
    s: aiohttp.ClientSession, url: str, headers: dict[str, str], **fields: Any
) -> tuple[int, dict[str, str]]:
    async with s.post(url + "/v1/completions", json=body(**fields), headers=headers) as r:
        await r.read()
        return r.status, {k.lower(): v for k, v in r.headers.items()}


async def test_the_model_server_gets_the_id_the_client_gets() -> None:
    async with recording_router() as (url, server), aiohttp.ClientSession() as s:
        _, mine = await _post(s, url, {REQUEST_ID: "client-7:a_b.c"})
        _, none = await _post(s, url, {})
        _, odd = await _post(s, url, {REQUEST_ID: "x" * 300})
    assert mine[REQUEST_ID] == "client-7:a_b.c"
    assert len(none[REQUEST_ID]) == 36 and len(odd[REQUEST_ID]) == 36
    assert server.ids == [mine[REQUEST_ID], none[REQUEST_ID], odd[REQUEST_ID]]


async def test_a_request_that_queued_is_told_for_how_long() -> None:
    config = fc_config(max_concurrency=1)
    async with running_router(config, sim=SIM) as rig, aiohttp.ClientSession() as s:
        blocker = asyncio.create_task(_post(s, rig.url, {}, max_tokens=50))  # ~0.5 s
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
        sent = time.monotonic()
        waiter = asyncio.create_task(_post(s, rig.url, {}))
        await until(lambda: queued(rig) == 1)
        first, second = await blocker, await waiter
        elapsed_ms = (time.monotonic() - sent) * 1000
    assert first[0] == second[0] == 200
    blocker_ms, waiter_ms = int(first[1][QUEUED_MS]), int(second[1][QUEUED_MS])
    # The blocker went at once; the other waited for most of the blocker's 50 tokens.
    assert 0 <= blocker_ms < 250 <= waiter_ms <= elapsed_ms


async def test_drops_say_when_to_try_again() -> None:
    config = fc_config(max_concurrency=1, band_max=1)
    async with running_router(config, sim=SIM) as rig, aiohttp.ClientSession() as s:
        blocker = asyncio.create_task(_post(s, rig.url, {}, max_tokens=100))  # ~1 s
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
        ttl = {"x-llm-d-inference-ttl": "150ms", REQUEST_ID: "short-ttl"}
        expired = asyncio.create_task(_post(s, rig.url, ttl))
        await until(lambda: queued(rig) == 1)
        full = await _post(s, rig.url, {})  # the band holds one request: full
        expired_status, expired_head = await expired
        assert (await blocker)[0] == 200
    status, head = full
    assert (status, head[REASON]) == (429, "rejected-saturated")
    assert 1 <= int(head["retry-after"]) <= 30  # half the 60 s TTL at most
    assert QUEUED_MS not in head  # refused at the door: it never queued
    assert len(head[REQUEST_ID]) == 36
    assert (expired_status, expired_head[REASON]) == (429, "rejected-ttl-expired")
    assert expired_head["retry-after"] == "1"  # its budget is spent: the floor
    assert int(expired_head[QUEUED_MS]) >= 150
    assert expired_head[REQUEST_ID] == "short-ttl"
