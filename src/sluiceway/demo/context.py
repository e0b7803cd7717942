"""What every step gets: the clock, where the broker lives, and the findings to add to."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from sluiceway.clock import Clock
from sluiceway.demo.findings import Findings
from sluiceway.demo.stack import DemoStack, StackSpec, running_demo_stack
from sluiceway.demo.traffic import Client

__all__ = ["StepContext", "until"]


@dataclass
class StepContext:
    clock: Clock
    redis_url: str | None = None
    findings: Findings = field(default_factory=Findings)

    @contextlib.asynccontextmanager
    async def stack(self, spec: StackSpec | None = None) -> AsyncIterator[tuple[DemoStack, Client]]:
        """A fresh stack for one step, and a client of its coordinator."""
        async with running_demo_stack(
            spec or StackSpec(), clock=self.clock, redis_url=self.redis_url
        ) as s:
            client = Client(s.url, self.clock)
            try:
                yield s, client
            finally:
                await client.aclose()


async def until(cond: Callable[[], bool], *, within: float = 30.0) -> bool:
    """Wait (wall seconds) for a state check that has no event to hold; False on timeout."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not cond():
        if loop.time() > end:
            return False
        await asyncio.sleep(0.002)
    return True
