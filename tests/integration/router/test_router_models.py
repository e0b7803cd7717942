"""Model-aware routing over loopback: a pool of two models answers every request for either
(none 404s at the server that does not have it), lists both in ``/v1/models``, answers an
unknown model 404 before it queues, and keeps each endpoint's models current."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from router_harness import fc_config, picker_config, sample, scrape, serving_router, until

from loopback import serving
from sluiceway.clock import RealClock
from sluiceway.router.app import RouterApp
from sluiceway.router.build import build_router
from sluiceway.router.settings import RouterSettings
from sluiceway.sim import SimConfig, running_simulator

FAST = SimConfig(time_to_first_token=0.005, inter_token_latency=0.002, max_num_seqs=8)
QUEUED = "llm_d_epp_flow_control_request_queue_duration_seconds_count"


def _router(urls: list[str], **settings: Any) -> RouterApp:
    app, _ = build_router(
        picker_config(fc_config()), RouterSettings(endpoints=tuple(urls), **settings), RealClock()
    )
    return app


@contextlib.asynccontextmanager
async def two_models() -> AsyncIterator[tuple[str, RouterApp]]:
    """The router over one simulator serving ``alpha`` and one serving ``beta``."""
    async with (
        running_simulator(FAST.replace({"model": "alpha"})) as alpha,
        running_simulator(FAST.replace({"model": "beta"})) as beta,
    ):
        app = _router([*alpha.urls, *beta.urls])
        async with serving_router(app) as url:
            yield url, app


def _client(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key="-", max_retries=0)


async def test_each_request_goes_to_an_endpoint_serving_its_model() -> None:
    async with two_models() as (url, _), _client(url) as client:

        async def one(model: str, stream: bool) -> str:
            if stream:
                chunks = await client.completions.create(
                    model=model, prompt="hi", max_tokens=2, stream=True
                )
                return {c.model async for c in chunks}.pop()
            out = await client.completions.create(model=model, prompt="hi", max_tokens=2)
            return out.model

        asked = [("alpha", "beta")[i % 2] for i in range(24)]
        answered = await asyncio.gather(*(one(m, i % 3 == 0) for i, m in enumerate(asked)))
        assert answered == asked  # none was sent to the server without its model
        listed = await client.models.list()
        assert [m.id for m in listed.data] == ["alpha", "beta"]
        assert all(m.object == "model" for m in listed.data)


async def test_an_unknown_model_is_vllms_404_before_it_queues() -> None:
    async with two_models() as (url, _), _client(url) as client:
        with pytest.raises(openai.NotFoundError) as err:
            await client.chat.completions.create(
                model="gamma", messages=[{"role": "user", "content": "hi"}]
            )
        assert err.value.body == {
            "message": "The model `gamma` does not exist.",
            "type": "NotFoundError",
            "param": "model",
            "code": 404,
        }
        await client.completions.create(model="alpha", prompt="hi", max_tokens=1)
        metrics = await scrape(url)
        # flow control saw alpha's request, never gamma's
        assert sample(metrics, QUEUED, model_name="alpha") == 1
        assert sample(metrics, QUEUED, model_name="gamma") == 0


class ModelServer:
    """A model server whose model list, health and answers the test controls."""

    def __init__(self, models: list[dict[str, Any]]) -> None:
        self.models: list[dict[str, Any]] | None = models  # None: /v1/models answers 500
        self.healthy = True
        self.asked = 0
        self.served: list[str] = []
        self.app = web.Application()
        self.app.router.add_get("/health", self._health)
        self.app.router.add_get("/v1/models", self._models)
        self.app.router.add_post("/v1/completions", self._complete)

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(status=200 if self.healthy else 503)

    async def _models(self, request: web.Request) -> web.Response:
        self.asked += 1
        if self.models is None:
            return web.json_response({"error": {"message": "down"}}, status=500)
        return web.json_response({"object": "list", "data": self.models})

    async def _complete(self, request: web.Request) -> web.Response:
        model = (await request.json())["model"]
        self.served.append(model)
        return web.json_response({"model": model, "choices": [{"text": "x"}]})


def _card(model: str, parent: str | None = None) -> dict[str, Any]:
    return {"id": model, "object": "model", "owned_by": "vllm", "root": model, "parent": parent}


async def _complete(s: aiohttp.ClientSession, url: str, model: str) -> int:
    payload = {"model": model, "prompt": "p", "max_tokens": 1}
    async with s.post(url + "/v1/completions", json=payload) as r:
        return r.status


async def test_lora_adapters_are_listed_with_their_parent_and_routed() -> None:
    base = ModelServer([_card("base"), _card("sql-lora", parent="base")])
    other = ModelServer([_card("other")])
    async with (
        serving(base.app) as url_base,
        serving(other.app) as url_other,
        serving_router(_router([url_base, url_other])) as url,
        aiohttp.ClientSession() as s,
    ):
        async with s.get(url + "/v1/models") as r:
            listed = (await r.json())["data"]
        assert [(m["id"], m["parent"]) for m in listed] == [
            ("base", None),
            ("other", None),
            ("sql-lora", "base"),
        ]
        for _ in range(3):
            assert await _complete(s, url, "sql-lora") == 200
        assert base.served == ["sql-lora"] * 3 and other.served == []


async def test_models_are_refreshed_and_a_failed_read_keeps_what_was_known() -> None:
    server = ModelServer([_card("old")])
    async with serving(server.app) as endpoint:
        app = _router([endpoint], models_interval=0.05)
        member = app.gateway.pool.members[endpoint]
        async with serving_router(app) as url, aiohttp.ClientSession() as s:
            assert await _complete(s, url, "new") == 404
            server.models = [_card("new")]
            await until(lambda: member.models == frozenset({"new"}), what="the refresh")
            assert (await _complete(s, url, "new"), await _complete(s, url, "old")) == (200, 404)
            server.models = None  # /v1/models now fails
            asked = server.asked
            await until(lambda: server.asked >= asked + 2, what="two failed reads")
            assert member.models == frozenset({"new"})
            assert await _complete(s, url, "new") == 200
            async with s.get(url + "/v1/models") as r:
                assert [m["id"] for m in (await r.json())["data"]] == ["new"]


async def test_an_endpoint_is_asked_when_it_turns_healthy_or_joins() -> None:
    alpha = ModelServer([_card("alpha")])
    beta = ModelServer([_card("beta")])
    beta.healthy, beta.models = False, None
    gamma = ModelServer([_card("gamma")])
    async with (
        serving(alpha.app) as url_alpha,
        serving(beta.app) as url_beta,
        serving(gamma.app) as url_gamma,
    ):
        # no periodic reads: only a change of health or membership asks
        app = _router([url_alpha, url_beta], health_interval=0.02, models_interval=0)
        pool = app.gateway.pool
        async with serving_router(app) as url, aiohttp.ClientSession() as s:
            assert await _complete(s, url, "beta") == 404
            beta.models, beta.healthy = [_card("beta")], True
            await until(lambda: pool.members[url_beta].models == frozenset({"beta"}), what="ask")
            assert await _complete(s, url, "beta") == 200 and beta.served == ["beta"]
            await app.gateway.set_endpoints([url_alpha, url_beta, url_gamma])
            assert pool.members[url_gamma].models == frozenset({"gamma"})  # known on joining
            assert await _complete(s, url, "gamma") == 200 and gamma.served == ["gamma"]
            assert alpha.served == []


async def test_an_endpoint_down_at_start_is_asked_when_it_comes_up() -> None:
    server = ModelServer([_card("late")])
    server.healthy, server.models = False, None  # starting: neither answers yet
    async with serving(server.app) as endpoint:
        app = _router([endpoint], health_interval=0.02, models_interval=0)
        member = app.gateway.pool.members[endpoint]
        async with serving_router(app) as url, aiohttp.ClientSession() as s:
            server.healthy, server.models = True, [_card("late")]
            await until(lambda: member.models == frozenset({"late"}), what="the first read")
            assert await _complete(s, url, "late") == 200
            assert await _complete(s, url, "other") == 404
