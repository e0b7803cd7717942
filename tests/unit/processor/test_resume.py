"""Prefix resume: the pure parts (events, stitching), and the HTTP loop against a scripted
upstream on loopback that evicts before the first byte, then cuts a stream, then finishes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from loopback import serving
from sluiceway.clock import RealClock
from sluiceway.processor.outcome import AttemptKind
from sluiceway.processor.resume import ResumeState, can_resume, parse_event, send_resuming
from sluiceway.router.outcomes import EVICTED_EVENT
from sluiceway.wire.headers import DROPPED_REASON


def test_parse_event_kinds() -> None:
    assert parse_event(b": keep-alive") is None
    assert parse_event(b"data: [DONE]") is not None and parse_event(b"data: [DONE]").done  # type: ignore[union-attr]
    evicted = parse_event(b'data: {"error": {"type": "evicted", "code": 429}}')
    assert evicted is not None and evicted.evicted  # routers before the code named it
    event = EVICTED_EVENT.strip()
    assert (parsed := parse_event(event)) is not None and parsed.evicted  # the router's own
    other = parse_event(b'data: {"error": {"type": "server_error", "code": 500}}')
    assert other is not None and not other.evicted and other.error is not None
    cut = parse_event(b'data: {"error": {"type": "BadGatewayError", "code": 502}}')
    assert cut is not None and cut.evicted  # the router's "model server cut the stream"
    text = parse_event(b'data: {"id": "c1", "choices": [{"text": " the", "finish_reason": null}]}')
    assert text is not None and text.text == " the" and text.meta == {"id": "c1"}


def test_only_single_text_completions_resume() -> None:
    body = {"model": "m", "prompt": "hi", "max_tokens": 8}
    assert can_resume("http://r/v1/completions", body)
    assert not can_resume("http://r/v1/chat/completions", body)
    assert not can_resume("http://r/v1/completions", {**body, "prompt": [1, 2]})
    assert not can_resume("http://r/v1/completions", {**body, "n": 2})
    assert not can_resume("http://r/v1/completions", {**body, "echo": True})
    assert not can_resume("http://r/v1/completions", {"model": "m", "prompt": "hi"})


def test_state_stitches_text_and_sums_usage() -> None:
    state = ResumeState({"model": "m", "prompt": "P", "max_tokens": 5})
    state.begin()
    state.add(parse_event(b'data: {"choices": [{"text": " a"}]}'))  # type: ignore[arg-type]
    state.add(parse_event(b'data: {"choices": [{"text": " b"}]}'))  # type: ignore[arg-type]
    state.end_attempt(evicted=True)
    body = json.loads(state.body())
    assert body["prompt"] == "P a b" and body["max_tokens"] == 3 and body["stream"] is True
    state.begin()
    for word in (" c", " d", " e"):
        state.add(parse_event(f'data: {{"choices": [{{"text": "{word}"}}]}}'.encode()))  # type: ignore[arg-type]
    usage = b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 3}}'
    state.add(parse_event(usage))  # type: ignore[arg-type]
    state.end_attempt(evicted=False)
    result = json.loads(state.result())
    assert result["choices"][0]["text"] == " a b c d e"
    assert result["usage"] == {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
    assert state.evictions == 1 and state.attempts == 2


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[str, list[dict[str, Any]], list[str | None]]]:
    """Attempt 1: 429 evicted. Attempt 2: two tokens, then the stream ends without [DONE].
    Attempt 3: the remaining tokens, usage, [DONE]. Keeps each attempt's body and queue TTL."""
    seen: list[dict[str, Any]] = []
    ttls: list[str | None] = []

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        seen.append(body)
        ttls.append(request.headers.get("x-llm-d-inference-ttl"))
        if len(seen) == 1:
            return web.Response(status=429, text="evicted", headers={DROPPED_REASON: "evicted"})
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        count = 2 if len(seen) == 2 else body["max_tokens"]
        for i in range(count):
            await resp.write(_event({"id": "c", "choices": [{"text": f" w{len(seen)}{i}"}]}))
        if len(seen) > 2:
            await resp.write(_event({"choices": [{"text": "", "finish_reason": "length"}]}))
            usage = {"prompt_tokens": 7, "completion_tokens": count}
            await resp.write(_event({"choices": [], "usage": usage}))
            await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    async with serving(app) as url:
        yield f"{url}/v1/completions", seen, ttls


async def test_resumes_after_a_429_eviction_and_a_cut_stream(
    scripted: tuple[str, list[dict[str, Any]], list[str | None]],
) -> None:
    url, seen, _ = scripted
    payload = {"model": "m", "prompt": "P", "max_tokens": 6}
    async with aiohttp.ClientSession() as session:
        attempt = await send_resuming(session, RealClock(), url, {}, payload, budget=30)
    assert attempt.kind is AttemptKind.HTTP and attempt.answer is not None
    assert attempt.answer.status == 200
    result = json.loads(attempt.answer.body)
    assert result["choices"][0]["text"] == " w20 w21 w30 w31 w32 w33"
    assert result["choices"][0]["finish_reason"] == "length"
    assert result["usage"]["completion_tokens"] == 6
    assert [b["max_tokens"] for b in seen] == [6, 6, 4]
    assert [b["prompt"] for b in seen] == ["P", "P", "P w20 w21"]
    assert all(b["stream"] is True for b in seen)


async def test_each_resumed_attempt_renews_its_queue_budget(
    scripted: tuple[str, list[dict[str, Any]], list[str | None]],
) -> None:
    """A resumed attempt queues again with less time left: its TTL is made anew each time."""
    url, _, ttls = scripted
    budgets = iter(["6.000s", "3.000s"])
    headers = {"x-llm-d-inference-ttl": "9.000s"}  # as the worker stamped the first
    payload = {"model": "m", "prompt": "P", "max_tokens": 6}
    async with aiohttp.ClientSession() as session:
        attempt = await send_resuming(
            session, RealClock(), url, headers, payload, budget=30, ttl=lambda: next(budgets)
        )
    assert attempt.answer is not None and attempt.answer.status == 200
    assert ttls == ["9.000s", "6.000s", "3.000s"]
