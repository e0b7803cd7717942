"""A zero-latency OpenAI-style upstream for benchmarks: answers every POST at once.

Run as a script; prints ``listening upstream <url>`` and serves until killed.
"""

from __future__ import annotations

import asyncio
import sys

from aiohttp import web

BODY = (
    b'{"id":"cmpl-0","object":"text_completion","model":"sim-model","choices":'
    b'[{"index":0,"text":"ok","finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}'
)


async def answer(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=BODY, content_type="application/json")


async def serve() -> None:
    app = web.Application()
    app.router.add_post("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(f"listening upstream http://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover
        pass
    sys.exit(asyncio.run(serve()))
