"""An endpoint that fails its health check is skipped; once it answers again it is used again."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web
from router_harness import picker_config, serving_router, until

from loopback import serving
from sluiceway.clock import RealClock
from sluiceway.router.build import build_router
from sluiceway.router.serve import Listen, serve_router
from sluiceway.router.settings import RouterSettings


class FakeServer:
    """A model server whose health can be switched and that counts what it served."""

    def __init__(self) -> None:
        self.healthy = True
        self.served = 0
        self.app = web.Application()
        self.app.router.add_get("/health", self._health)
        self.app.router.add_post("/v1/completions", self._complete)

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(status=200 if self.healthy else 503)

    async def _complete(self, request: web.Request) -> web.Response:
        self.served += 1
        return web.json_response({"choices": [{"text": "x"}]})


async def test_unhealthy_endpoint_is_skipped_and_comes_back() -> None:
    a, b = FakeServer(), FakeServer()
    async with serving(a.app) as url_a, serving(b.app) as url_b:
        settings = RouterSettings(endpoints=(url_a, url_b), health_interval=0.02)
        config = picker_config(
            "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"
        )
        app, _ = build_router(config, settings, RealClock())
        stop = asyncio.Event()
        bound: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(
            serve_router(app, Listen(port=0), stop=stop, on_bound=bound.set_result)
        )
        url = await bound
        pool = app.gateway.pool
        try:
            async with aiohttp.ClientSession() as s:

                async def send(n: int) -> None:
                    for _ in range(n):
                        payload = {"model": "m", "prompt": "p"}
                        async with s.post(url + "/v1/completions", json=payload) as r:
                            assert r.status == 200

                await send(4)
                assert (a.served, b.served) == (2, 2)
                a.healthy = False
                await until(lambda: [m.url for m in pool.healthy] == [url_b])
                await send(4)
                assert (a.served, b.served) == (2, 6)
                a.healthy = True
                await until(lambda: len(pool.healthy) == 2)
                await send(4)
                assert a.served == 4
        finally:
            stop.set()
            await task


async def test_not_ready_while_every_endpoint_is_unhealthy() -> None:
    server = FakeServer()
    async with serving(server.app) as endpoint:
        settings = RouterSettings(endpoints=(endpoint,), health_interval=0.02)
        config = picker_config("apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\n")
        app, _ = build_router(config, settings, RealClock())
        pool = app.gateway.pool
        async with serving_router(app) as url, aiohttp.ClientSession() as s:

            async def readyz() -> tuple[int, dict[str, str]]:
                async with s.get(url + "/readyz") as r:
                    return r.status, await r.json()

            assert await readyz() == (200, {"status": "ready"})
            server.healthy = False
            await until(lambda: pool.healthy == [])
            assert await readyz() == (503, {"status": "not ready", "reason": "no healthy endpoint"})
            server.healthy = True
            await until(lambda: len(pool.healthy) == 1)
            assert (await readyz())[0] == 200
