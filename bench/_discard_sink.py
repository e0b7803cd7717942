"""A loopback OTLP/HTTP sink for benchmarks: answers every POST 200 and keeps nothing.

Run as a script; prints ``listening sink <url>`` and serves until killed. The router's
exporter then pays for encoding and sending its spans, and nothing else.
"""

from __future__ import annotations

import asyncio
import sys

from aiohttp import web


async def discard(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(status=200, content_type="application/x-protobuf")


async def serve() -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/{tail:.*}", discard)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"listening sink http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(serve()))
