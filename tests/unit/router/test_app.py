"""Routing of the ASGI app without a network: health, readiness, unknown routes, lifespan."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import orjson

from sluiceway.clock import VirtualClock
from sluiceway.router.build import build_router, load_picker_config
from sluiceway.router.settings import RouterSettings


async def _call(
    app: Any, path: str, method: str = "GET", headers: list[tuple[bytes, bytes]] | None = None
) -> tuple[int, bytes]:
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(msg: MutableMapping[str, Any]) -> None:
        sent.append(msg)

    scope = {"type": "http", "path": path, "method": method, "headers": headers or []}
    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def _app() -> Any:
    config, _ = load_picker_config(None)
    app, _ = build_router(config, RouterSettings(endpoints=("http://127.0.0.1:9",)), VirtualClock())
    return app


async def test_health_readiness_and_unknown_routes() -> None:
    app = _app()
    assert (await _call(app, "/healthz"))[0] == 200
    status, body = await _call(app, "/readyz")
    assert status == 503 and orjson.loads(body) == {"status": "not ready"}
    status, body = await _call(app, "/nope")
    assert status == 404 and orjson.loads(body)["error"]["code"] == 404
    assert (await _call(app, "/v1/completions", "GET"))[0] == 404
    assert (await _call(app, "/metrics"))[0] == 200


async def test_mode_header_dispatch_only_when_a_coordinator_is_mounted() -> None:
    app = _app()
    mode = [(b"x-llm-d-async-mode", b"wait")]
    assert (await _call(app, "/healthz", headers=mode))[0] == 200
    calls: list[str] = []

    async def coordinator(scope: Any, receive: Any, send: Any) -> None:
        calls.append(scope["path"])
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    app.mount_coordinator(coordinator)
    assert (await _call(app, "/v1/completions", "POST", mode))[0] == 202
    assert (await _call(app, "/v1/requests/x"))[0] == 202
    assert (await _call(app, "/healthz"))[0] == 200
    assert calls == ["/v1/completions", "/v1/requests/x"]


async def test_lifespan_is_acknowledged() -> None:
    app = _app()
    queue = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    async def send(msg: MutableMapping[str, Any]) -> None:
        sent.append(msg["type"])

    await app({"type": "lifespan"}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
