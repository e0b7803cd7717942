"""A router whose pool changes while it runs, in front of simulators: shared by the tests of
the membership sources (endpoints file, DNS, Pods)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import aiohttp
from router_harness import body, fc_config, picker_config, serving_router

from sluiceway.clock import RealClock
from sluiceway.router.app import RouterApp
from sluiceway.router.build import build_router
from sluiceway.router.pool import EndpointPool
from sluiceway.router.settings import RouterSettings
from sluiceway.sim import Engine

Job = Callable[[], Coroutine[Any, Any, None]]


def served(engine: Engine) -> int:
    """Requests ``engine`` has finished."""
    return sum(engine.stats.finished.values())


@dataclass
class Router:
    """A router reached over HTTP; ``app`` when it runs in this process (not a CLI's)."""

    url: str
    app: RouterApp | None
    session: aiohttp.ClientSession

    @property
    def pool(self) -> EndpointPool:
        assert self.app is not None
        return self.app.gateway.pool

    def members(self) -> set[str]:
        """The endpoints taking traffic."""
        return {m.url for m in self.pool.healthy}

    async def complete(self, max_tokens: int = 1) -> int:
        """One request through the router; its status."""
        async with self.session.post(self.url + "/v1/completions", json=body(max_tokens)) as r:
            await r.read()
            return r.status

    async def until_served_by(self, engine: Engine, *, limit: float = 10.0) -> float:
        """Send requests one after another until ``engine`` has finished one more; the wall
        seconds that took."""
        start = time.monotonic()
        before = served(engine)
        while served(engine) == before:
            if time.monotonic() - start > limit:
                raise AssertionError("no request reached the endpoint")
            await self.complete()
        return time.monotonic() - start

    async def ready(self) -> tuple[int, dict[str, Any]]:
        async with self.session.get(self.url + "/readyz") as r:
            return r.status, await r.json()

    async def metrics(self) -> str:
        async with self.session.get(self.url + "/metrics") as r:
            return await r.text()


@contextlib.asynccontextmanager
async def discovering_router(
    endpoints: tuple[str, ...],
    jobs: Callable[[RouterApp], list[Job]],
    *,
    pool_name: str | None = None,
    clock: RealClock | None = None,
) -> AsyncIterator[Router]:
    """A router starting with ``endpoints`` (maybe none), with flow control on, running the
    background ``jobs(app)`` while the block runs."""
    clock = clock or RealClock()
    settings = RouterSettings(endpoints=endpoints, pool_name=pool_name, health_interval=0.2)
    app, _ = build_router(picker_config(fc_config()), settings, clock)
    async with serving_router(app) as url, aiohttp.ClientSession() as session:
        tasks = [asyncio.create_task(job()) for job in jobs(app)]
        try:
            yield Router(url, app, session)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
