"""vLLM's other routes through the router: embeddings with the official client, the tokenizer
routes, ``/health``, and the responses, score and rerank routes proxied with the cost their
route gives them (what the pool counts while each is in flight)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from router_harness import (
    fc_config,
    picker_config,
    running_router,
    sample,
    scrape,
    serving_router,
    until,
)

from loopback import serving
from sluiceway.clock import RealClock
from sluiceway.router.build import build_router
from sluiceway.router.settings import RouterSettings
from sluiceway.sim import SimConfig

FAST = SimConfig(time_to_first_token=0.005, inter_token_latency=0.002)
QUEUED = "llm_d_epp_flow_control_request_queue_duration_seconds_count"
FAILURES = "sluiceway_router_upstream_failures_total"


async def test_embeddings_through_the_router_with_the_openai_client() -> None:
    async with running_router(fc_config(), sim=FAST) as rig:
        async with openai.AsyncOpenAI(base_url=rig.base, api_key="-", max_retries=0) as client:
            texts = ["the river bank", "the river gate"]
            floats = await client.embeddings.create(
                model="sim-model", input=texts, encoding_format="float"
            )
            decoded = await client.embeddings.create(model="sim-model", input=texts)  # base64
            with pytest.raises(openai.NotFoundError):
                await client.embeddings.create(model="other", input="x")
        assert floats.usage.prompt_tokens == 6 and len(floats.data) == 2
        for got, want in zip(decoded.data, floats.data, strict=True):
            pairs = zip(got.embedding, want.embedding, strict=True)
            assert len(got.embedding) == 64 and all(abs(a - b) < 1e-6 for a, b in pairs)
        metrics = await scrape(rig.url)
        assert sample(metrics, QUEUED, model_name="sim-model") == 2  # through flow control
        assert sample(metrics, QUEUED, model_name="other") == 0  # 404 before queueing


async def test_tokenize_detokenize_and_health_through_the_router() -> None:
    async with running_router(fc_config(), sim=FAST) as rig, aiohttp.ClientSession() as s:
        body = {"model": "sim-model", "prompt": " river gate"}
        async with s.post(rig.url + "/tokenize", json=body) as r:
            assert r.status == 200
            tokens = await r.json()
        assert tokens["count"] == 2 and tokens["max_model_len"] == FAST.max_model_len
        async with s.post(rig.url + "/detokenize", json={"tokens": tokens["tokens"]}) as r:
            assert (r.status, await r.json()) == (200, {"prompt": " river gate"})
        async with s.get(rig.url + "/health") as r:
            assert (r.status, await r.read()) == (200, b"")
        async with s.get(rig.url + "/tokenize") as r:
            assert r.status == 405 and r.headers["Allow"] == "POST"


RESPONSE_EVENTS = [
    ("response.created", {"type": "response.created", "response": {"usage": None}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": " hi"}),
    (
        "response.completed",
        {
            "type": "response.completed",
            "response": {"status": "completed", "usage": {"input_tokens": 3, "output_tokens": 1}},
        },
    ),
]


class HeldServer:
    """A model server that holds every POST until ``release`` is set, and records it."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.app = web.Application()
        self.app.router.add_get("/health", self._health)
        self.app.router.add_post("/{path:.+}", self._post)

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response()

    async def _post(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seen.append((request.path, body))
        await self.release.wait()
        if not body.get("stream"):
            return web.json_response({"path": request.path, "usage": {"prompt_tokens": 1}})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for name, data in RESPONSE_EVENTS:
            await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        await response.write_eof()
        return response


@pytest.mark.parametrize(
    ("path", "body", "tokens"),
    [
        ("/v1/responses", {"input": "x" * 400, "max_output_tokens": 50}, 100 + 50),
        ("/v1/responses", {"instructions": "y" * 40, "input": "x" * 40}, 10 + 10 + 16),
        ("/v1/embeddings", {"input": "x" * 400}, 100),
        ("/score", {"text_1": "a" * 80, "text_2": ["b" * 40, "c" * 40]}, 20 + 87 // 4),
        ("/v1/score", {"text_1": "a" * 80, "text_2": "b" * 80}, 40),
        ("/rerank", {"query": "q" * 40, "documents": ["d" * 200]}, 10 + 51),
        ("/v1/rerank", {"query": "q" * 40, "documents": ["d" * 200]}, 10 + 51),
        ("/v2/rerank", {"query": "q" * 40, "documents": ["d" * 200]}, 10 + 51),
        ("/pooling", {"input": "x" * 80}, 20),
        ("/classify", {"input": "x" * 80}, 20),
        ("/tokenize", {"prompt": "p" * 80}, 20),
        ("/detokenize", {"tokens": list(range(30))}, 30),
    ],
)
async def test_each_route_is_proxied_costed_as_its_route_says(
    path: str, body: dict[str, Any], tokens: int
) -> None:
    server = HeldServer()
    async with serving(server.app) as endpoint:
        settings = RouterSettings(endpoints=(endpoint,))
        app, _ = build_router(picker_config(fc_config()), settings, RealClock())
        member = app.gateway.pool.members[endpoint]
        async with serving_router(app) as url, aiohttp.ClientSession() as s:
            call = asyncio.create_task(s.post(url + path, json={"model": "m", **body}))
            await until(lambda: len(server.seen) == 1, what="the request upstream")
            assert (member.inflight, member.inflight_tokens) == (1, tokens)
            server.release.set()
            async with await call as r:
                assert r.status == 200 and (await r.json())["path"] == path
            assert server.seen == [(path, {"model": "m", **body})]  # forwarded unchanged
            assert (member.inflight, member.inflight_tokens) == (0, 0)


async def test_a_streamed_response_ends_with_its_own_last_event_not_an_error() -> None:
    server = HeldServer()
    server.release.set()
    async with serving(server.app) as endpoint:
        settings = RouterSettings(endpoints=(endpoint,))
        app, _ = build_router(picker_config(fc_config()), settings, RealClock())
        async with serving_router(app) as url, aiohttp.ClientSession() as s:
            payload = {"model": "m", "input": "hi", "stream": True}
            async with s.post(url + "/v1/responses", json=payload) as r:
                assert r.status == 200
                text = await r.text()
            metrics = await scrape(url)
    events = [e.split("\n")[0] for e in text.strip().split("\n\n")]
    assert events == [f"event: {name}" for name, _ in RESPONSE_EVENTS]
    assert "[DONE]" not in text and "BadGatewayError" not in text
    assert "stream_options" not in server.seen[0][1]  # not asked of the Responses API
    assert sample(metrics, FAILURES, phase="mid_stream") == 0
