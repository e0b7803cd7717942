"""HTTP endpoints of a processor: ``/healthz``, ``/readyz`` and ``/metrics`` (Starlette).

``/healthz`` always answers 200 while the process runs. ``/readyz`` answers 200 only between a
completed start and the beginning of a drain, and only while the broker answers a ping.
``/metrics`` serves the processor's own registry in the Prometheus text format.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["health_app"]

_PING_TIMEOUT = 3.0  # wall seconds


def health_app(
    *,
    ready: Callable[[], bool],
    ping: Callable[[], Awaitable[None]],
    registry: CollectorRegistry,
) -> Starlette:
    """The health and metrics routes over the given readiness, broker ping and registry."""

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        if not ready():
            return JSONResponse({"status": "not ready"}, status_code=503)
        try:
            await asyncio.wait_for(ping(), _PING_TIMEOUT)
        except Exception as exc:
            body = {"status": "not ready", "error": f"{type(exc).__name__}: {exc}"}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ready"})

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics),
        ]
    )
