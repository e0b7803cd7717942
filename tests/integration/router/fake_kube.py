"""A fake Kubernetes API server on loopback: lists and watches of collections the test fills,
and single objects to GET.

A collection serves its ``items`` with ``metadata.resourceVersion``; ``?watch=true`` streams the
events the test pushes (``None`` ends the watch call, as the server's timeout would; an
``ERROR`` event ends it after being sent, as the API server does). Every request's query is
kept, so a test can check the selector and versions the client sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from loopback import serving


@dataclass
class Collection:
    """One list/watch endpoint: ``items`` at ``version``, and the watch events to stream."""

    kind: str
    items: list[dict[str, Any]] = field(default_factory=list)
    version: int = 10
    lists: int = 0
    queries: list[dict[str, str]] = field(default_factory=list)
    watch_versions: list[str] = field(default_factory=list)
    events: asyncio.Queue[dict[str, Any] | None] = field(default_factory=asyncio.Queue)

    def push(self, kind: str, obj: dict[str, Any]) -> None:
        self.events.put_nowait({"type": kind, "object": obj})

    def end_watch(self) -> None:
        self.events.put_nowait(None)

    def gone(self) -> None:
        """Tell the client its version is too old (410), which ends the watch call."""
        status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
        self.events.put_nowait({"type": "ERROR", "object": status})


class FakeApiServer:
    """Collections by path (``add``) and objects to GET by path (``objects``)."""

    def __init__(self) -> None:
        self.collections: dict[str, Collection] = {}
        self.objects: dict[str, dict[str, Any]] = {}
        self.gets: list[str] = []
        self.app = web.Application()
        self.app.router.add_get("/{path:.*}", self._handle)

    def add(self, path: str, kind: str) -> Collection:
        self.collections[path] = found = Collection(kind)
        return found

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        found = self.collections.get(path)
        if found is None:
            self.gets.append(path)
            obj = self.objects.get(path)
            if obj is None:
                status = {"kind": "Status", "code": 404, "reason": "NotFound", "message": path}
                return web.json_response(status, status=404)
            return web.json_response(obj)
        found.queries.append(dict(request.query))
        if request.query.get("watch") in ("true", "True", "1"):
            return await self._watch(request, found)
        found.lists += 1
        return web.json_response(
            {
                "kind": f"{found.kind}List",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": str(found.version)},
                "items": found.items,
            }
        )

    async def _watch(self, request: web.Request, found: Collection) -> web.StreamResponse:
        found.watch_versions.append(request.query.get("resourceVersion", ""))
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionResetError):  # the client went first
            while True:
                event = await found.events.get()
                if event is None:
                    break
                await response.write(orjson.dumps(event) + b"\n")
                if event["type"] == "ERROR":  # the API server ends a watch after an error
                    break
            await response.write_eof()
        return response

    def close_watches(self) -> None:
        """End every open watch call, so the server can stop at once."""
        for found in self.collections.values():
            found.end_watch()


@contextlib.asynccontextmanager
async def fake_api(server: FakeApiServer) -> AsyncIterator[Any]:
    """``server`` on loopback and a ``kubernetes_asyncio`` API client pointed at it."""
    import kubernetes_asyncio as k8s

    async with serving(server.app) as url:
        api = k8s.client.ApiClient(k8s.client.Configuration(host=url))
        try:
            yield api
        finally:
            await api.close()
            server.close_watches()
