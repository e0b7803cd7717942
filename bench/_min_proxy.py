"""The minimal aiohttp streaming proxy the router benchmark compares against.

No flow control, no picker: one upstream, bytes relayed as they arrive. Run as a script with
the upstream URL; prints ``listening proxy <url>`` and serves until killed.
"""

from __future__ import annotations

import asyncio
import sys

import aiohttp
from aiohttp import web

_HOP = frozenset({"host", "content-length", "connection", "transfer-encoding", "keep-alive"})


async def serve(upstream: str) -> None:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), auto_decompress=False)

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        async with session.post(upstream + request.path, data=body, headers=headers) as up:
            out = web.StreamResponse(status=up.status)
            out.content_type = up.content_type
            await out.prepare(request)
            async for chunk in up.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out

    app = web.Application()
    app.router.add_post("/{tail:.*}", relay)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"listening proxy http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    import uvloop

    sys.exit(uvloop.run(serve(sys.argv[1])))
