"""A small exporter of the router's pool-saturation gauge, with a value the test sets.

It serves the effective stage and a decode stage with a different value, so a reader that
does not prefer ``stage="effective"`` is caught."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web

from sluiceway.ports import free_port

METRIC = "llm_d_epp_flow_control_pool_saturation"


@dataclass
class Exporter:
    pool: str
    port: int
    effective: float = 0.0
    decode: float = 0.05

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def page(self) -> str:
        return (
            f"# TYPE {METRIC} gauge\n"
            f'{METRIC}{{inference_pool="{self.pool}",stage="decode"}} {self.decode}\n'
            f'{METRIC}{{inference_pool="{self.pool}",stage="effective"}} {self.effective}\n'
        )


@asynccontextmanager
async def saturation_exporter(pool: str) -> AsyncIterator[Exporter]:
    exporter = Exporter(pool, free_port())

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(text=exporter.page(), content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", exporter.port).start()
    try:
        yield exporter
    finally:
        await runner.cleanup()
