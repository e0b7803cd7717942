"""The Kubernetes objective watch against a fake API server: list, watch from the list's
resourceVersion, ADDED / MODIFIED / DELETED, and a relist after 410 Gone."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
import pytest
from aiohttp import web
from router_harness import until

from loopback import serving
from sluiceway.router.objectives import ObjectiveTable

k8s = pytest.importorskip("kubernetes_asyncio")

from sluiceway.router.kube import ObjectiveWatch  # noqa: E402

PATH = "/apis/llm-d.ai/v1alpha2/inferenceobjectives"


def _obj(name: str, prio: int, pool: str = "p", rv: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "llm-d.ai/v1alpha2",
        "kind": "InferenceObjective",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv), "uid": name},
        "spec": {"priority": prio, "poolRef": {"name": pool}},
        "status": {"conditions": []},
    }


class FakeApiServer:
    """Serves one cluster-wide list; ``?watch=true`` streams events pushed by the test."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.version = 10
        self.lists = 0
        self.watch_versions: list[str] = []
        self.events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.app = web.Application()
        self.app.router.add_get(PATH, self._handle)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") in ("true", "True", "1"):
            return await self._watch(request)
        self.lists += 1
        return web.json_response(
            {
                "kind": "InferenceObjectiveList",
                "apiVersion": "llm-d.ai/v1alpha2",
                "metadata": {"resourceVersion": str(self.version)},
                "items": self.items,
            }
        )

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        self.watch_versions.append(request.query.get("resourceVersion", ""))
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        while True:
            event = await self.events.get()
            if event is None:
                break
            await response.write(orjson.dumps(event) + b"\n")
            if event["type"] == "ERROR":  # the API server ends a watch after an error
                break
        await response.write_eof()
        return response


async def test_list_watch_events_and_relist_after_gone() -> None:
    fake = FakeApiServer()
    fake.items = [_obj("a", 100), _obj("b", -5), _obj("other", 7, pool="q")]
    async with serving(fake.app) as url:
        conf = k8s.client.Configuration(host=url)
        api = k8s.client.ApiClient(conf)
        table = ObjectiveTable()
        watch = ObjectiveWatch(api, table, "p", retry=0.01)
        task = asyncio.create_task(watch.run())
        try:
            await until(lambda: table.names() == {"a": 100, "b": -5})
            await until(lambda: fake.watch_versions == ["10"])
            fake.events.put_nowait({"type": "ADDED", "object": _obj("c", 30, rv=11)})
            fake.events.put_nowait({"type": "MODIFIED", "object": _obj("a", 50, rv=12)})
            fake.events.put_nowait({"type": "DELETED", "object": _obj("b", -5, rv=13)})
            await until(lambda: table.names() == {"a": 50, "c": 30})
            # The watch ends: it resumes from the last version it saw, without a list.
            fake.events.put_nowait(None)
            await until(lambda: fake.watch_versions == ["10", "13"])
            assert fake.lists == 1
            # 410 Gone: the router lists again and installs the fresh state.
            fake.items, fake.version = [_obj("d", -10, rv=40)], 40
            gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
            fake.events.put_nowait({"type": "ERROR", "object": gone})
            await until(lambda: table.names() == {"d": -10})
            await until(lambda: fake.watch_versions[-1] == "40")
            assert fake.lists == 2
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await api.close()
            fake.events.put_nowait(None)  # end the open watch so the server stops at once
