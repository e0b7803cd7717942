"""One HTTP attempt as a value: answers, Retry-After, dropped reason, transport failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from loopback import serving
from sluiceway.clock import RealClock
from sluiceway.ports import free_port
from sluiceway.processor.outcome import AttemptKind
from sluiceway.processor.upstream import Upstream, encode_body, usage_tokens


async def handler(request: web.Request) -> web.Response:
    mode = request.headers.get("x-mode", "ok")
    if mode == "slow":
        await asyncio.sleep(0.5)
    if mode == "busy":
        headers = {"Retry-After": "7", "x-llm-d-request-dropped-reason": "rejected-saturated"}
        return web.Response(status=429, text="full", headers=headers)
    return web.json_response({"usage": {"prompt_tokens": 3, "completion_tokens": 5}})


@pytest.fixture
async def server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    async with serving(app) as url:
        yield f"{url}/v1/completions"


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = Upstream(RealClock(), connections=4)
    await up.start()
    yield up
    await up.aclose()


async def test_an_answer_with_usage(server: str, upstream: Upstream) -> None:
    attempt = await upstream.send(server, {}, encode_body({"a": 1}), budget=5)
    assert attempt.kind is AttemptKind.HTTP and attempt.answer is not None
    assert attempt.answer.status == 200 and usage_tokens(attempt.answer.body) == (3, 5)


async def test_retry_after_and_dropped_reason_are_read(server: str, upstream: Upstream) -> None:
    attempt = await upstream.send(server, {"x-mode": "busy"}, b"{}", budget=5)
    assert attempt.answer is not None and attempt.answer.status == 429
    assert attempt.retry_after == 7.0 and attempt.dropped_reason == "rejected-saturated"


async def test_the_attempt_budget_is_a_timeout(server: str, upstream: Upstream) -> None:
    attempt = await upstream.send(server, {"x-mode": "slow"}, b"{}", budget=0.05)
    assert attempt.kind is AttemptKind.TIMEOUT and attempt.answer is None


async def test_connection_refused_is_a_transport_failure(upstream: Upstream) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/completions"
    attempt = await upstream.send(url, {}, b"{}", budget=5)
    assert attempt.kind is AttemptKind.CONNECT_ERROR and "Connect" in attempt.error


@pytest.mark.parametrize(
    "payload",
    [
        {"prompt": "héllo ✓", "temperature": 0.7, "stop": None, "logit_bias": {"50256": -100}},
        {"seed": 2**70},  # beyond 64 bits: the standard encoder takes it
        {1: "a key that is not a string"},
        ["a", 1e-05, 1e16, True],
    ],
)
def test_every_decoded_payload_is_sent_as_the_same_json(payload: object) -> None:
    body = encode_body(payload)
    expected = json.loads(json.dumps(payload))
    assert json.loads(body) == expected
    assert b", " not in body and b": " not in body  # compact


def test_body_and_usage_helpers() -> None:
    assert encode_body(None) == b"{}"
    assert encode_body({"prompt": "x"}) == b'{"prompt":"x"}'
    assert usage_tokens("not json") is None
    assert usage_tokens('{"usage": null}') == (0, 0)
    long = (
        '{"choices": [{"text": "'
        + "x" * 5000
        + '"}], "usage": {"prompt_tokens": 7, "completion_tokens": 9}}'
    )
    assert usage_tokens(long) == (7, 9)
    assert usage_tokens('{"text": "the \\"usage\\" of words", "usage": {"prompt_tokens": 1}}') == (
        1,
        0,
    )
    assert usage_tokens('{"choices": []}') is None
