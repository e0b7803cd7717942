"""/healthz, /readyz (readiness and broker ping) and /metrics."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from sluiceway.errors import BrokerError
from sluiceway.processor.http_app import health_app


async def ok() -> None:
    return None


async def down() -> None:
    raise BrokerError("no route to redis")


class Answer:
    def __init__(self) -> None:
        self.status_code = 0
        self.text = ""


async def get(app: Any, path: str) -> Answer:
    """Call an ASGI app once (no HTTP client library needed)."""
    answer = Answer()
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("t", 80),
        "client": ("c", 1),
        "root_path": "",
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer.status_code = message["status"]
        elif message["type"] == "http.response.body":
            answer.text += message.get("body", b"").decode()

    await app(scope, receive, send)
    return answer


@pytest.mark.parametrize(
    ("ready", "ping", "status"), [(True, ok, 200), (False, ok, 503), (True, down, 503)]
)
async def test_readiness(ready: bool, ping: object, status: int) -> None:
    app = health_app(ready=lambda: ready, ping=ping, registry=CollectorRegistry())  # type: ignore[arg-type]
    assert (await get(app, "/readyz")).status_code == status
    assert (await get(app, "/healthz")).status_code == 200


async def test_metrics_serves_the_given_registry() -> None:
    registry = CollectorRegistry()
    Counter("llm_d_async_async_request", "x", registry=registry).inc()
    app = health_app(ready=lambda: True, ping=ok, registry=registry)
    body = (await get(app, "/metrics")).text
    assert "llm_d_async_async_request_total 1.0" in body
