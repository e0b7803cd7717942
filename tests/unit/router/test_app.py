"""Routing of the ASGI app without a network: health, readiness, methods, limits, keys when a
coordinator is mounted, the drain hook, lifespan."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import orjson
import pytest

from sluiceway.clock import VirtualClock
from sluiceway.router.build import build_router, load_picker_config
from sluiceway.router.limits import RequestLimits
from sluiceway.router.settings import RouterSettings
from sluiceway.router.trust import HeaderTrust

Raw = list[tuple[bytes, bytes]]


async def _reply(
    app: Any,
    path: str,
    method: str = "GET",
    headers: Raw | None = None,
    body: list[bytes] | None = None,
) -> tuple[int, dict[bytes, bytes], bytes]:
    """Status, headers and body of one request; ``body`` arrives in those chunks."""
    sent: list[MutableMapping[str, Any]] = []
    chunks = list(body or [b""])

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}

    async def send(msg: MutableMapping[str, Any]) -> None:
        sent.append(msg)

    scope = {"type": "http", "path": path, "method": method, "headers": headers or []}
    await app(scope, receive, send)
    head = dict(sent[0]["headers"])
    return sent[0]["status"], head, b"".join(m.get("body", b"") for m in sent[1:])


async def _call(
    app: Any, path: str, method: str = "GET", headers: Raw | None = None
) -> tuple[int, bytes]:
    status, _, body = await _reply(app, path, method, headers)
    return status, body


def _app(endpoints: tuple[str, ...] = ("http://127.0.0.1:9",), **settings: Any) -> Any:
    config, _ = load_picker_config(None)
    app, _ = build_router(config, RouterSettings(endpoints=endpoints, **settings), VirtualClock())
    return app


def _error(body: bytes) -> dict[str, Any]:
    error: dict[str, Any] = orjson.loads(body)["error"]
    return error


async def test_health_readiness_and_unknown_routes() -> None:
    app = _app()
    assert (await _call(app, "/healthz"))[0] == 200
    status, body = await _call(app, "/readyz")
    assert status == 503 and orjson.loads(body) == {"status": "not ready", "reason": "starting"}
    status, body = await _call(app, "/nope")
    assert status == 404 and orjson.loads(body)["error"]["code"] == 404
    assert (await _call(app, "/metrics"))[0] == 200
    assert (await _call(app, "/healthz", "HEAD"))[0] == 200


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("POST", "/metrics", b"GET, HEAD"),
        ("POST", "/healthz", b"GET, HEAD"),
        ("DELETE", "/readyz", b"GET, HEAD"),
        ("POST", "/v1/models", b"GET"),
        ("GET", "/v1/completions", b"POST"),
        ("PUT", "/v1/chat/completions", b"POST"),
        ("GET", "/v1/embeddings", b"POST"),
        ("GET", "/v1/responses", b"POST"),
        ("GET", "/tokenize", b"POST"),
        ("GET", "/v2/rerank", b"POST"),
        ("POST", "/health", b"GET, HEAD"),
    ],
)
async def test_a_known_path_with_another_method_is_405_with_allow(
    method: str, path: str, allow: bytes
) -> None:
    status, head, body = await _reply(_app(), path, method)
    assert status == 405 and head[b"allow"] == allow
    assert _error(body)["code"] == 405 and method in _error(body)["message"]


async def test_health_is_vllms_empty_200_and_keyless() -> None:
    status, head, body = await _reply(_app(), "/health")
    assert (status, body) == (200, b"") and b"content-type" not in head
    app = _app()
    app.mount_coordinator(_refuse, key_check=lambda headers: False)
    assert (await _call(app, "/health"))[0] == 200
    assert (await _call(app, "/v1/embeddings", "POST"))[0] == 401


@pytest.mark.parametrize(
    "path",
    [
        "/v1/embeddings",
        "/v1/responses",
        "/tokenize",
        "/detokenize",
        "/score",
        "/v1/score",
        "/rerank",
        "/v1/rerank",
        "/v2/rerank",
        "/pooling",
        "/classify",
    ],
)
async def test_vllms_post_routes_are_proxied_not_404(path: str) -> None:
    # no endpoint is healthy before start(): the request reaches the request path, which
    # reads the body first (here not JSON: 400), where an unknown route would be 404
    status, _, body = await _reply(_app(), path, "POST", [], [b"not json"])
    assert status == 400 and "malformed JSON" in _error(body)["message"]


async def _refuse(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not for the coordinator")


async def test_not_ready_without_a_healthy_endpoint_or_with_none_configured() -> None:
    app = _app()
    app.gateway.started = True  # as after start(): the first health check found none healthy
    status, body = await _call(app, "/readyz")
    assert status == 503 and orjson.loads(body)["reason"] == "no healthy endpoint"
    app.gateway.pool.mark("http://127.0.0.1:9", True)
    assert await _call(app, "/readyz") == (200, b'{"status":"ready"}')
    app.gateway.pool.mark("http://127.0.0.1:9", False)
    assert (await _call(app, "/readyz"))[0] == 503
    empty = _app(endpoints=())
    empty.gateway.started = True
    assert (await _call(empty, "/readyz"))[0] == 503
    app.gateway.pool.mark("http://127.0.0.1:9", True)
    app.gateway.draining = True
    assert orjson.loads((await _call(app, "/readyz"))[1])["reason"] == "draining"


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ([(b"x-h", b"v")] * 101, "more than 100 header fields"),
        ([(b"x-big", b"v" * (16 * 1024))], "a header field is over 16384 bytes"),
        ([(b"x-h", b"v" * 15000)] * 5, "header fields over 65536 bytes in total"),
    ],
)
async def test_headers_over_the_limits_are_431_on_every_route(headers: Raw, message: str) -> None:
    app = _app()
    for path, method in (("/v1/completions", "POST"), ("/healthz", "GET")):
        status, _, body = await _reply(app, path, method, headers)
        assert status == 431 and _error(body) == {
            "message": message,
            "type": "RequestHeaderFieldsTooLargeError",
            "code": 431,
        }
    assert (await _call(app, "/healthz", headers=[(b"x-h", b"v")] * 100))[0] == 200


async def test_a_body_over_the_limit_is_413_by_its_length_or_as_it_arrives() -> None:
    app = _app(limits=RequestLimits(body_bytes=1000))
    declared = [(b"content-length", b"1001")]
    status, _, body = await _reply(app, "/v1/completions", "POST", declared, [b"x" * 10])
    assert status == 413 and _error(body)["message"] == "request body over 1000 bytes"
    status, _, body = await _reply(app, "/v1/completions", "POST", [], [b"x" * 600] * 2)
    assert status == 413 and _error(body)["code"] == 413
    # at the limit: read, and answered by the request path (here: not JSON)
    status, _, body = await _reply(app, "/v1/completions", "POST", [], [b"x" * 500] * 2)
    assert status == 400


async def test_a_mounted_coordinators_keys_guard_the_routers_own_routes() -> None:
    app = _app()
    passed: list[dict[str, str]] = []

    def key_check(headers: Any) -> bool:
        passed.append(dict(headers))
        return headers.get("authorization") == "Bearer k1"

    async def coordinator(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    app.mount_coordinator(coordinator, key_check=key_check)
    status, _, body = await _reply(app, "/v1/completions", "POST")
    assert status == 401 and _error(body) == {
        "message": "missing or unknown API key",
        "type": "AuthenticationError",
        "code": 401,
    }
    assert (await _call(app, "/v1/models", headers=[(b"authorization", b"Bearer no")]))[0] == 401
    assert (await _call(app, "/nope"))[0] == 401  # no key: nothing about the routes is told
    # with the key: on to the route (no healthy endpoint here)
    assert (await _call(app, "/v1/models", headers=[(b"authorization", b"Bearer k1")]))[0] == 503
    for probe in ("/healthz", "/readyz", "/metrics"):
        assert (await _call(app, probe))[0] != 401
    # the mode header goes to the coordinator, which checks keys itself
    mode = [(b"x-llm-d-async-mode", b"wait")]
    assert (await _call(app, "/v1/completions", "POST", mode))[0] == 202
    # with no trustedSources, direct callers' identity headers are dropped, and the key too
    assert app.gateway.trust == HeaderTrust(keyed=True)


async def test_without_keys_the_direct_path_stays_open() -> None:
    app = _app()

    async def coordinator(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not for the coordinator")

    app.mount_coordinator(coordinator)
    assert (await _call(app, "/v1/models"))[0] == 503
    assert app.gateway.trust.open


async def test_the_router_drain_begins_with_the_mounted_coordinators() -> None:
    app = _app()
    seen: list[bool] = []

    async def coordinator(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("no requests here")

    app.mount_coordinator(coordinator, on_drain=lambda: seen.append(app.gateway.draining))
    await app.drain()
    assert seen == [False] and app.gateway.draining


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


CALLS = [
    ("/healthz", "GET", [], [b""]),
    ("/metrics", "GET", [], [b""]),
    ("/readyz", "GET", [], [b""]),
    ("/v1/models", "GET", [], [b""]),
    ("/nope", "GET", [], [b""]),
    ("/metrics", "POST", [], [b""]),
    ("/v1/completions", "POST", [], [b"not json"]),
    ("/v1/completions", "POST", [(b"x-h", b"v")] * 101, [b""]),
    ("/v1/completions", "POST", [(b"content-length", b"2000")], [b""]),
]


@pytest.mark.parametrize(("path", "method", "headers", "body"), CALLS)
async def test_every_answer_carries_the_callers_request_id_or_a_fresh_one(
    path: str, method: str, headers: Raw, body: list[bytes]
) -> None:
    app = _app(limits=RequestLimits(body_bytes=1000))
    _, head, _ = await _reply(app, path, method, [*headers, (b"x-request-id", b"mine-1")], body)
    assert head[b"x-request-id"] == b"mine-1"
    _, head, _ = await _reply(app, path, method, list(headers), list(body))
    _, again, _ = await _reply(app, path, method, list(headers), list(body))
    assert len(head[b"x-request-id"]) == 36 and head[b"x-request-id"] != again[b"x-request-id"]
    odd = [*headers, (b"x-request-id", b"not kept")]
    _, head, _ = await _reply(app, path, method, odd, list(body))
    assert len(head[b"x-request-id"]) == 36


async def test_the_routers_own_503s_carry_retry_after() -> None:
    app = _app()
    status, head, _ = await _reply(app, "/v1/models")  # no endpoint healthy yet
    assert status == 503 and head[b"retry-after"] == b"1"  # nothing queued ahead
    app.gateway.draining = True
    payload = orjson.dumps({"model": "m", "prompt": "x"})
    status, head, _ = await _reply(app, "/v1/completions", "POST", [], [payload])
    assert status == 503 and head[b"x-llm-d-request-dropped-reason"] == b"rejected-shutting-down"
    assert head[b"retry-after"] == b"1" and b"x-request-id" in head
    _, head, _ = await _reply(app, "/nope")
    assert b"retry-after" not in head  # only on 429 and 503
