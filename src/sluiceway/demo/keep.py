"""``sluiceway demo --keep-running``: one stack left up for the user's own requests.

The guide's evictable router, the coordinator on the router's listener, the processor with 16
workers and its metrics on a port of their own; it runs until Ctrl-C (or SIGTERM).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal

from prometheus_client import make_asgi_app
from rich.console import Console

from sluiceway.clock import Clock
from sluiceway.demo.stack import StackSpec, running_demo_stack
from sluiceway.serving import start_server

__all__ = ["keep_running", "usage_text"]


def usage_text(url: str, processor_metrics: str) -> str:
    """The URLs, and how to send a request with the ``openai`` client."""
    return f"""\
coordinator  {url}/v1   (x-llm-d-async-mode: passthrough | wait | enqueue; x-llm-d-tenant)
router       {url}/v1   (no mode header: straight to flow control)
metrics      {url}/metrics (router)   {processor_metrics} (processor)
results      {url}/v1/requests/<id>

    from openai import OpenAI
    client = OpenAI(base_url="{url}/v1", api_key="-", default_headers={{
        "x-llm-d-tenant": "premium", "x-llm-d-async-mode": "wait"}})
    print(client.completions.create(model="sim-model", prompt="hi", max_tokens=8))

Tenants: realtime (live), premium (interactive, quota 2), standard (async, 2), batch (batch, 1).
Press Ctrl-C to stop."""


async def keep_running(clock: Clock, redis_url: str | None, console: Console) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with running_demo_stack(StackSpec(), clock=clock, redis_url=redis_url) as stack:
        await stack.start_processor()
        metrics = await start_server(make_asgi_app(stack.registry), name="processor-metrics")
        try:
            console.print(
                usage_text(stack.url, metrics.url + "/metrics"), highlight=False, soft_wrap=True
            )
            await stop.wait()
        finally:
            await metrics.stop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(sig)
