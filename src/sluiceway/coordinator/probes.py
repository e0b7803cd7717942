"""``/healthz``, ``/readyz`` and ``/metrics``: what balancers and scrapers ask (``GET`` or
``HEAD``; another method is 405, see ``methods.py``).

``/readyz`` is 503 once a drain has begun or while the broker does not answer a ping within
3 s, so a balancer stops sending; ``/healthz`` only says the process serves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sluiceway.broker.base import Broker
from sluiceway.coordinator.methods import PROBE, Handler

__all__ = ["Probes"]

_PING_TIMEOUT: Final = 3.0


class Probes:
    """The three probe routes of one coordinator."""

    def __init__(
        self, broker: Broker, registry: CollectorRegistry, *, draining: Callable[[], bool]
    ) -> None:
        self._broker = broker
        self._registry = registry
        self._draining = draining

    def routes(self) -> dict[str, dict[str, Handler]]:
        """Path -> method -> handler, for :func:`~sluiceway.coordinator.methods.own_routes`."""
        handlers = {"/healthz": self.healthz, "/readyz": self.readyz, "/metrics": self.metrics}
        return {path: dict.fromkeys(PROBE, handler) for path, handler in handlers.items()}

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        if self._draining():
            return JSONResponse({"status": "draining"}, status_code=503)
        try:
            await asyncio.wait_for(self._broker.ping(), _PING_TIMEOUT)
        except Exception as exc:
            return JSONResponse({"status": "not ready", "error": str(exc)}, status_code=503)
        return JSONResponse({"status": "ready"})

    async def metrics(self, request: Request) -> Response:
        return Response(generate_latest(self._registry), media_type=CONTENT_TYPE_LATEST)
